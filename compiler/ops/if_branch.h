// SPDX-License-Identifier: Apache-2.0
// If: ONNX's conditional, with its two branches as subgraphs. torch's exporter writes one where
// it cannot tell a size while exporting: `x.squeeze(d)` becomes If(Equal(Shape(x)[d], 1),
// Squeeze, Identity) (nn.LocalResponseNorm writes it so). ofc knows every shape when compiling,
// so such a condition folds to a constant, and the taken branch's ops take the If's place; a
// condition computed at run time is refused in one line. The importer keeps the branches in
// Graph::branches (graph.h).
#pragma once

#include <cstddef>

#include "compiler/ir/graph.h"

namespace of::compiler {

// Replaces If node `n` of `g`, whose condition is a compile-time constant, by the nodes of the
// branch it takes (their outputs the If's), relinks `g` and returns how many nodes took its
// place (>= 1). Fails naming the node when the condition is not known.
size_t take_if_branch(Graph& g, size_t n);

}  // namespace of::compiler
