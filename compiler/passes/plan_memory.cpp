// SPDX-License-Identifier: Apache-2.0
// plan-memory: afterwards every register slot and variable has an offset in its device's arena
// and every arena its size. Lifetimes: variables live for the whole run, and so does every slot
// of a streamed register, because actors work on different pieces at once, so any two slots can
// be in flight together. Sharing bytes between registers needs ordering edges between their
// tasks (not made yet: every slot keeps its own bytes, in one-device and parallel plans alike).
#include <algorithm>
#include <numeric>

#include "compiler/passes/memory_planner.h"
#include "compiler/passes/pass.h"

namespace of::compiler {

MemoryPlan plan_offsets(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  // When every buffer lives for the same span (all of a streamed plan today), nothing can share:
  // lay them out in order, in linear time, instead of the quadratic search below.
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
  // Greedy best-fit by decreasing size: place each buffer at the lowest offset where it does not
  // collide with any already-placed buffer whose lifetime overlaps its own.
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  struct Placed {
    uint64_t begin, end;
    int64_t first, last;
  };
  std::vector<Placed> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i : order) {
    const BufferRequest& r = requests[i];
    uint64_t size = add_aligned(0, r.bytes);
    busy.clear();
    for (const Placed& p : placed)
      if (p.first <= r.last && r.first <= p.last) busy.emplace_back(p.begin, p.end);
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (size <= b && offset <= b - size) break;
      offset = std::max(offset, e);
    }
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, add_aligned(offset, size));
    placed.push_back(Placed{offset, add_aligned(offset, size), r.first, r.last});
  }
  return plan;
}

bool PlanMemory::run(Compilation& c) {
  TaskGraph& tg = c.tasks;
  const int64_t whole_run_end = int64_t(tg.tasks.size());
  for (Arena& arena : tg.arenas) {
    std::vector<BufferRequest> requests;
    std::vector<std::pair<bool, size_t>> owner;  // (is variable, index); slot index follows
    std::vector<int32_t> slot_of;
    for (size_t v = 0; v < tg.variables.size(); ++v) {
      if (tg.variables[v].arena != arena.id) continue;
      requests.push_back({tg.variables[v].bytes, 0, whole_run_end});
      owner.emplace_back(true, v);
      slot_of.push_back(0);
    }
    for (size_t r = 0; r < tg.regsts.size(); ++r) {
      Regst& regst = tg.regsts[r];
      if (regst.arena != arena.id) continue;
      regst.offsets.assign(size_t(regst.slots), 0);
      for (int32_t s = 0; s < regst.slots; ++s) {
        requests.push_back({regst.slot_bytes, 0, whole_run_end});
        owner.emplace_back(false, r);
        slot_of.push_back(s);
      }
    }
    MemoryPlan plan = plan_offsets(requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      if (owner[i].first)
        tg.variables[owner[i].second].offset = plan.offsets[i];
      else
        tg.regsts[owner[i].second].offsets[size_t(slot_of[i])] = plan.offsets[i];
    }
    arena.bytes = plan.total;
  }
  return true;
}

}  // namespace of::compiler
