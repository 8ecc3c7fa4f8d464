// SPDX-License-Identifier: Apache-2.0
// Compile-time constant folding (const_eval.cpp): infer-shapes asks it first for every node.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace of::compiler {

// A name torch's exporter made up ("onnx::MatMul_12", "/blocks.0/Constant_output_0"), not a
// state_dict name.
bool exporter_named(const std::string& name);

// A float initializer under a model's own name (or, with Graph::train_folded, an exporter-made
// one): trained (or frozen) state, never folded; but not one marked comparison_only.
bool is_parameter(const Graph& g, const Value& v);

// Marks the float initializers from which no path of float values leads to a graph output (every
// path passes a comparison, a logical op, Shape, an arg-max or a Cast to a non-float type): no
// gradient can reach them, as none reaches them in torch, so they are constants, and what they
// feed folds (a float tril buffer compared with 0 becomes a constant mask). Nodes in topological
// order, as ONNX stores them; run before folding.
void mark_comparison_only(Graph& g);

// When every input of `node` is known at compile time (Shape: only its input's shape) and the op
// is one the evaluator knows, gives its outputs shapes and contents and returns true; the node
// is then dead. Fails (naming the node) when the constants are invalid for the op.
bool try_fold(Graph& g, Node& node);

}  // namespace of::compiler
