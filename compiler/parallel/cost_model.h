// SPDX-License-Identifier: Apache-2.0
// The cost model SBP inference and pipeline balancing share: floating-point work per op and what
// a byte moved or a flop computed costs in time. Rough CPU figures: only their ratio steers the
// choices, and a device kind with other figures would bring its own.
#pragma once

#include "compiler/ir/graph.h"

namespace of::compiler {

inline constexpr double kSecondsPerByte = 1.0 / 5e9;   // between devices (a copy in one process)
inline constexpr double kSecondsPerFlop = 1.0 / 2e10;  // one core's sgemm, roughly

// Estimated floating-point operations of one act of `n` (matrix products and convolutions by
// their multiply-adds, everything else one per output element).
double flops_of(const Graph& g, const Node& n);

}  // namespace of::compiler
