// SPDX-License-Identifier: Apache-2.0
// Which registers share bytes, and the order that makes it safe (the rule: schemas/
// shared_memory.h). Part of plan-memory: it forms the share groups, adds the control registers
// their order needs, and lays out one frame of each group; plan-memory places the frames.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/task_graph.h"

namespace of::compiler {

// One frame of a share group: where each of its registers' slot j lies in frame j.
struct FrameLayout {
  std::vector<RegstId> regsts;
  std::vector<uint64_t> offsets;  // per register, from the frame's start
  uint64_t bytes = 0;             // one frame (aligned); the group takes slots x bytes
};

// Per device, registers streamed between compute tasks of that device form groups (by slot
// count, joined by the tasks they share); a group whose frame is smaller than its registers'
// bytes laid side by side becomes a share group of `tg` (control registers added to order its
// tasks), and its frame is returned, indexed like tg.share_groups. Tasks are ordered
// topologically (smallest task id first among the ready ones).
std::vector<FrameLayout> share_memory(TaskGraph& tg);

}  // namespace of::compiler
