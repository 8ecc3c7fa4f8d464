// SPDX-License-Identifier: Apache-2.0
// What a data x tensor x pipeline split costs before it is materialised: closed forms over the
// graph parallelize starts from (the same for every split), for --auto to rank many splits and
// compile only the few it ranks best (auto_parallel.h). Compiling a candidate plays its plan
// (step_time.h) and stays the honest figure; this one only orders them.
//
// Per device and step, with m pieces (micro-batches) per step:
//   compute   each forward and backward op's work (kernels/kernel_work.h at the costs' rates) over
//             the dp x tp devices sharing it, m times; updates over tp (zero: over dp x tp), once;
//             pipeline stages run (m + pp - 1) pieces of the slowest stage (the fill and drain);
//             every op a task, each act costing the task overhead, and under tp 1 + log2(tp)
//             more acts per op for its layout conversions;
//   dp        each stage's gradients all-reduced over dp once a step: 2(dp-1)/dp of its bytes / tp
//             at the bandwidth of the slowest link the group spans, plus 2 log2(dp) latencies;
//   tp        the output of each forward matrix product reduced over tp, forward and backward
//             (Megatron's pairs reduce once each way: one all-reduce of the output per product);
//   pp        each stage boundary's activations sent forward and their gradients back per piece.
// Communication is added to compute (no overlap): an upper bound, as fair to every split.
#pragma once

#include <string>

#include "common/machine_costs.h"
#include "compiler/ir/graph.h"

namespace of::compiler {

struct StrategyShape {
  int32_t dp = 1, tp = 1, pp = 1;
  int32_t micro_batches = 1;
  int32_t ranks = 1, devices = 1;  // the cluster: devices in all, numbered rank-major
  bool zero = false;               // optimizer state and updates split over dp
};

struct StrategyEstimate {
  double compute_s = 0, dp_s = 0, tp_s = 0, pp_s = 0;
  double step_seconds() const { return compute_s + dp_s + tp_s + pp_s; }
};

// `g`: the graph before parallelize (after autodiff and add-optimizer for training).
StrategyEstimate estimate_strategy(const Graph& g, const StrategyShape& s, const MachineCosts& costs);

}  // namespace of::compiler
