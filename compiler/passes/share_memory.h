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
  // What undo_sharing needs to give the graph back as it was: the registers and groups it had,
  // and the group and slot count of each register a group took.
  struct Taken {
    RegstId regst;
    int32_t share_group, slots;
  };
  size_t regsts_before = 0;
  size_t groups_before = 0;
  std::vector<Taken> taken;
};

// Per device, registers streamed between compute tasks of that device form candidate groups (by
// slot count, joined by the tasks they share). A candidate `keep` accepts whose frame is smaller
// than its registers' bytes laid side by side becomes a share group of `tg`: control registers
// from its first task to its other sources, and frame registers to its ends. `most_frames` > 0
// caps a group's frames (and its registers' slots): 1 where pieces cannot overlap anyway.
// `how`: CompileOptions::share_order.
Sharing share_memory(TaskGraph& tg, int32_t most_frames, ShareOrder how, const std::function<bool(size_t)>& keep);

// Gives `tg` back as it was before share_memory returned `s` (plan-memory tries groups and falls
// back; a copy of the whole graph to fall back to was gigabytes at a thousand devices).
void undo_sharing(TaskGraph& tg, const Sharing& s);

}  // namespace of::compiler
