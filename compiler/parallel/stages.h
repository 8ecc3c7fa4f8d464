// SPDX-License-Identifier: Apache-2.0
// Pipeline stages: which stage each node of a training or inference graph runs in. One rule for
// parallelize (which places the stages on devices) and the strategy estimate (which costs them).
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace of::compiler {

// Forward ops form `pp` contiguous stages, cut where the running work (flops_of) crosses each
// stage's share, no stage empty while ops remain for it, or at `starts` (the first op of each
// stage after the first: --parallel-config's boundaries) when given; a backward op joins its
// forward op's stage, an update the stage of its weight's first reader.
std::vector<int32_t> pipeline_stages(const Graph& g, int32_t pp, const std::vector<NodeId>& starts);

}  // namespace of::compiler
