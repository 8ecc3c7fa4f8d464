// SPDX-License-Identifier: Apache-2.0
// What the fusion passes (fuse-gelu, fuse-layer-norm) ask of the imported graph when they match
// an exporter's decomposition of one op: a float scalar constant, the single reader of an
// intermediate, the other input of a two-input node.
#pragma once

#include <optional>

#include "compiler/ir/graph.h"

namespace of::compiler::pattern {

// v's value when it is a float32 constant holding one element (any rank), else nullopt.
std::optional<float> scalar(const Graph& g, ValueId v);

// v is a float32 one-element constant within a relative 1e-6 of `want`.
bool is_scalar(const Graph& g, ValueId v, float want);

// The node reading v when v is an intermediate that exactly one `op` node (default domain, one
// output) reads and that is not a graph output; else -1.
NodeId only_reader(const Graph& g, ValueId v, const char* op);

// The input of a two-input node that is not `v` (either order), or kNoValue.
ValueId other_input(const Node& n, ValueId v);

}  // namespace of::compiler::pattern
