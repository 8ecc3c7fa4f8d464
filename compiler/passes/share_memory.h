// SPDX-License-Identifier: Apache-2.0
// Which registers share bytes, and the order that makes it safe (the rule: schemas/
// shared_memory.h). Part of plan-memory: it forms the share groups, adds the control registers
// their order needs, and lays out one frame of each group; plan-memory places the frames.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/ir/task_graph.h"
#include "compiler/passes/pass.h"

namespace of::compiler {

// One frame of a share group: where each of its registers' slot j lies in frame j.
struct FrameLayout {
  std::vector<RegstId> regsts;
  std::vector<uint64_t> offsets;  // per register, from the frame's start
  uint64_t bytes = 0;             // one frame (aligned); the group takes slots x bytes
};

struct Sharing {
  std::vector<FrameLayout> frames;  // indexed like tg.share_groups
  size_t candidates = 0;            // groups considered, applied or not (the indices `keep` sees)
};

// Per device, registers streamed between compute tasks of that device form candidate groups (by
// slot count, joined by the tasks they share). A candidate `keep` accepts whose frame is smaller
// than its registers' bytes laid side by side becomes a share group of `tg`: control registers
// from its first task to its other sources, and frame registers to its ends. `most_frames` > 0
// caps a group's frames (and its registers' slots): 1 where pieces cannot overlap anyway.
// `how`: CompileOptions::share_order.
Sharing share_memory(TaskGraph& tg, int32_t most_frames, ShareOrder how, const std::function<bool(size_t)>& keep);

}  // namespace of::compiler
