// SPDX-License-Identifier: Apache-2.0
// plan-memory: afterwards every register slot and variable has an offset in its device's arena
// and every arena its size. Variables live for the whole run, and so does every slot of a
// streamed register, because actors work on different pieces at once, so any two slots can be in
// flight together, unless a share group orders their uses (share_memory.h): its registers share
// bytes within each of its frames, and its frames, like everything else, live for the whole run.
#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "compiler/passes/memory_planner.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/share_memory.h"

namespace of::compiler {

MemoryPlan plan_offsets(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  // When every buffer lives for the same span (all of a streamed plan today), nothing can share:
  // lay them out in order, in linear time, instead of the quadratic best fit.
  bool same_lifetime = std::all_of(requests.begin(), requests.end(), [&](const BufferRequest& r) {
    return r.first == requests[0].first && r.last == requests[0].last;
  });
  if (same_lifetime) {
    for (size_t i = 0; i < requests.size(); ++i) {
      plan.offsets[i] = plan.total;
      plan.total = add_aligned(plan.total, requests[i].bytes);
    }
    return plan;
  }
  std::vector<uint64_t> bytes;
  for (const BufferRequest& r : requests) bytes.push_back(r.bytes);
  return place_best_fit(bytes, [&](size_t a, size_t b) {
    return requests[a].first <= requests[b].last && requests[b].first <= requests[a].last;
  });
}

MemoryPlan place_best_fit(const std::vector<uint64_t>& bytes, const std::function<bool(size_t, size_t)>& live_together) {
  // Greedy best-fit by decreasing size: place each buffer at the lowest offset where it does not
  // collide with any already-placed buffer live together with it.
  MemoryPlan plan;
  plan.offsets.assign(bytes.size(), 0);
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  // What is placed, by offset: the buffers live together with the next one come out in the
  // order the gap search takes them (sorting them per buffer was most of this at thousands).
  std::vector<size_t> placed;
  for (size_t i : order) {
    const uint64_t size = add_aligned(0, bytes[i]);
    uint64_t offset = 0;
    for (size_t k : placed) {
      const uint64_t b = plan.offsets[k];
      if (size <= b && offset <= b - size) break;
      if (live_together(k, i)) offset = std::max(offset, add_aligned(b, bytes[k]));
    }
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, add_aligned(offset, size));
    placed.insert(std::upper_bound(placed.begin(), placed.end(), offset, [&](uint64_t o, size_t k) { return o < plan.offsets[k]; }), i);
  }
  return plan;
}

bool PlanMemory::run(Compilation& c) {
  TaskGraph& tg = c.tasks;
  std::vector<FrameLayout> frames;
  if (c.options.share_memory) {
    // A share group's frame is checked like the plan's own edges. Should the actors stall with
    // it where the plan without it does not, only the groups that stall on their own are left
    // out (and all of them, if the rest still stall together).
    auto stalls = [&](const TaskGraph& t) {  // the check check-plan makes
      try {
        check_no_deadlock(t, deadlock_check_pieces(t, c.options));
        return false;
      } catch (const Error&) {
        return true;
      }
    };
    // Training one piece per step on one stage: step n + 1 reads the weights step n updates, so
    // a second piece in a group would only wait; one frame holds the step.
    const bool one_stage = std::all_of(tg.tasks.begin(), tg.tasks.end(), [](const Task& t) { return t.stage == 0; });
    const int32_t most_frames = c.options.train && c.options.micro_batches == 1 && one_stage ? 1 : 0;
    Sharing sharing = share_memory(tg, most_frames, share_order_of(c.options), [](size_t) { return true; });
    c.played_to_end = !sharing.frames.empty();
    if (!sharing.frames.empty() && stalls(tg)) {
      c.played_to_end = false;
      undo_sharing(tg, sharing);
      std::vector<bool> alone(sharing.candidates, false);
      for (size_t i = 0; i < sharing.candidates; ++i) {
        const Sharing one = share_memory(tg, most_frames, share_order_of(c.options), [&](size_t k) { return k == i; });
        alone[i] = !one.frames.empty() && !stalls(tg);
        undo_sharing(tg, one);
      }
      sharing = share_memory(tg, most_frames, share_order_of(c.options), [&](size_t k) { return alone[k]; });
      if (stalls(tg)) {
        undo_sharing(tg, sharing);
        sharing = Sharing{};
      } else {
        c.played_to_end = true;
      }
    }
    frames = std::move(sharing.frames);
  }
  const int64_t whole_run_end = int64_t(tg.tasks.size());
  // What lies in each arena, gathered once (a plan has an arena per device and millions of
  // registers: scanning them all per arena was most of this pass at 1024 devices).
  std::vector<std::vector<size_t>> variables_in(tg.arenas.size()), regsts_in(tg.arenas.size()), frames_in(tg.arenas.size());
  for (size_t v = 0; v < tg.variables.size(); ++v) variables_in[size_t(tg.variables[v].arena)].push_back(v);
  for (size_t r = 0; r < tg.regsts.size(); ++r) regsts_in[size_t(tg.regsts[r].arena)].push_back(r);
  for (size_t g = 0; g < frames.size(); ++g) frames_in[size_t(tg.regsts[size_t(frames[g].regsts[0])].arena)].push_back(g);
  for (Arena& arena : tg.arenas) {
    // What each request places: a variable, a slot of a register of its own, or a share group.
    struct Owner {
      enum class Kind : int8_t { variable, slot, group } kind;
      size_t index;
      int32_t slot;
    };
    std::vector<BufferRequest> requests;
    std::vector<Owner> owner;
    for (size_t v : variables_in[size_t(arena.id)]) {
      requests.push_back({tg.variables[v].bytes, 0, whole_run_end});
      owner.push_back({Owner::Kind::variable, v, 0});
    }
    for (size_t r : regsts_in[size_t(arena.id)]) {
      Regst& regst = tg.regsts[r];
      regst.offsets.assign(size_t(regst.slots), 0);
      if (regst.share_group >= 0) continue;
      for (int32_t s = 0; s < regst.slots; ++s) {
        requests.push_back({regst.slot_bytes, 0, whole_run_end});
        owner.push_back({Owner::Kind::slot, r, s});
      }
    }
    for (size_t g : frames_in[size_t(arena.id)]) {
      requests.push_back({frames[g].bytes * uint64_t(tg.share_groups[g].slots), 0, whole_run_end});
      owner.push_back({Owner::Kind::group, g, 0});
    }
    MemoryPlan plan = plan_offsets(requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Owner& o = owner[i];
      if (o.kind == Owner::Kind::variable) {
        tg.variables[o.index].offset = plan.offsets[i];
      } else if (o.kind == Owner::Kind::slot) {
        tg.regsts[o.index].offsets[size_t(o.slot)] = plan.offsets[i];
      } else {
        const FrameLayout& f = frames[o.index];
        for (size_t k = 0; k < f.regsts.size(); ++k) {
          Regst& r = tg.regsts[size_t(f.regsts[k])];
          for (int32_t s = 0; s < r.slots; ++s) r.offsets[size_t(s)] = plan.offsets[i] + uint64_t(s) * f.bytes + f.offsets[k];
        }
      }
    }
    arena.bytes = plan.total;
  }
  return true;
}

}  // namespace of::compiler
