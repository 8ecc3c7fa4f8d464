// SPDX-License-Identifier: Apache-2.0
// share-memory (part of plan-memory). Why groups are shaped this way:
// - Only registers whose producer and readers are compute tasks of the register's own device
//   share: their uses are ordered by that device's tasks alone. A register read by a transfer (or
//   landed by one from another rank), a source, a sink or a snapshot keeps its own bytes.
// - A group holds registers of one slot count, so that slot j of each is used by the same pieces.
//   Tasks joined by such registers form one group; registers of other slot counts (a pipeline
//   stage's activations kept for the backward pass, pp - s + 1 slots) do not join them, so the
//   forward and the backward of a stage stay separate groups whose frames bound only the pieces
//   in each, not the pieces the pipeline keeps between them.
// - Ordering the group's tasks one after another costs nothing on a device that runs one kernel at
//   a time, and on CPU pieces still overlap: the frame lets `slots` pieces be in the group at once.
#include "compiler/passes/share_memory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <queue>

#include "compiler/passes/memory_planner.h"
#include "schemas/shared_memory.h"

namespace of::compiler {
namespace {

bool streamed_per_piece(const Regst& r) { return !r.persistent && r.acts_per_piece == 1; }

// Tasks in an order every register respects: a streamed one's producer before its readers, a
// persistent one's readers before its producer (an update of version n waits for every reader of
// version n). Empty when they form a cycle (then nothing is shared).
std::vector<TaskId> topological_order(const TaskGraph& tg) {
  std::vector<std::vector<TaskId>> after(tg.tasks.size());
  for (const Regst& r : tg.regsts)
    for (TaskId c : r.consumers) {
      if (c == r.producer) continue;
      if (r.persistent) after[size_t(c)].push_back(r.producer);
      else after[size_t(r.producer)].push_back(c);
    }
  std::vector<int32_t> waiting(tg.tasks.size(), 0);
  for (const auto& next : after)
    for (TaskId t : next) ++waiting[size_t(t)];
  std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> ready;
  for (const Task& t : tg.tasks)
    if (waiting[size_t(t.id)] == 0) ready.push(t.id);
  std::vector<TaskId> order;
  while (!ready.empty()) {
    TaskId t = ready.top();
    ready.pop();
    order.push_back(t);
    for (TaskId c : after[size_t(t)])
      if (--waiting[size_t(c)] == 0) ready.push(c);
  }
  if (order.size() != tg.tasks.size()) order.clear();
  return order;
}

int32_t arena_of_device(const TaskGraph& tg, int32_t device) {
  for (const Arena& a : tg.arenas)
    if (a.device == device) return a.id;
  return -1;
}

bool may_share(const TaskGraph& tg, const Regst& r) {
  if (!streamed_per_piece(r) || r.slot_bytes == 0 || r.blobs.empty() || r.consumers.empty()) return false;
  const Task& producer = tg.tasks[size_t(r.producer)];
  const int32_t device = tg.arenas[size_t(r.arena)].device;
  if (producer.kind != TaskKind::compute || producer.device != device) return false;
  return std::all_of(r.consumers.begin(), r.consumers.end(), [&](TaskId c) {
    return tg.tasks[size_t(c)].kind == TaskKind::compute && tg.tasks[size_t(c)].device == device;
  });
}

struct Sets {
  std::vector<int32_t> parent;
  explicit Sets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  }
  void join(int32_t a, int32_t b) { parent[size_t(find(a))] = find(b); }
};

// A control register: orders `to` after `from` for each piece, carrying nothing.
RegstId add_control(TaskGraph& tg, TaskId from, TaskId to, int32_t slots, int32_t arena) {
  Regst c;
  c.id = RegstId(tg.regsts.size());
  c.producer = from;
  c.consumers = {to};
  c.slots = slots;
  c.arena = arena;
  tg.regsts.push_back(c);
  tg.tasks[size_t(from)].out_regsts.push_back(c.id);
  tg.tasks[size_t(to)].in_regsts.push_back(c.id);
  return c.id;
}

bool joined(const TaskGraph& tg, TaskId from, TaskId to) {
  for (RegstId r : tg.tasks[size_t(from)].out_regsts) {
    const Regst& x = tg.regsts[size_t(r)];
    if (x.producer == from && streamed_per_piece(x) && std::find(x.consumers.begin(), x.consumers.end(), to) != x.consumers.end())
      return true;
  }
  return false;
}

}  // namespace

std::vector<FrameLayout> share_memory(TaskGraph& tg) {
  std::vector<FrameLayout> frames;
  const std::vector<TaskId> order = topological_order(tg);
  if (order.empty()) return frames;
  std::vector<int32_t> place(tg.tasks.size());
  for (size_t i = 0; i < order.size(); ++i) place[size_t(order[i])] = int32_t(i);

  // Candidate groups: by (device, slots), tasks joined by the registers they share.
  std::map<std::pair<int32_t, int32_t>, std::vector<RegstId>> by_kind;
  for (const Regst& r : tg.regsts)
    if (may_share(tg, r)) by_kind[{tg.arenas[size_t(r.arena)].device, r.slots}].push_back(r.id);
  for (const auto& [kind, regsts] : by_kind) {
    Sets sets(tg.tasks.size());
    for (RegstId r : regsts)
      for (TaskId c : tg.regsts[size_t(r)].consumers) sets.join(tg.regsts[size_t(r)].producer, c);
    std::map<int32_t, std::vector<RegstId>> groups;
    for (RegstId r : regsts) groups[sets.find(tg.regsts[size_t(r)].producer)].push_back(r);
    for (auto& [root, members] : groups) {
      std::vector<TaskId> tasks;
      for (RegstId r : members) {
        tasks.push_back(tg.regsts[size_t(r)].producer);
        for (TaskId c : tg.regsts[size_t(r)].consumers) tasks.push_back(c);
      }
      std::sort(tasks.begin(), tasks.end(), [&](TaskId a, TaskId b) { return place[size_t(a)] < place[size_t(b)]; });
      tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
      // Plans list producers before readers (ofrun checks streamed registers by task id), so an
      // order that puts a later task first (to let an update follow every reader of the version
      // it replaces) would read as a cycle there: such a group keeps its bytes apart.
      if (!std::is_sorted(tasks.begin(), tasks.end())) continue;
      ShareGroup group{.slots = kind.second, .tasks = tasks, .frame = -1};
      const std::vector<int32_t> at = plan::places_in_group(tg, group);
      std::vector<BufferRequest> requests;
      uint64_t side_by_side = 0;
      for (RegstId r : members) {
        plan::Lifetime life = plan::lifetime_in_group(tg.regsts[size_t(r)], at);
        requests.push_back({tg.regsts[size_t(r)].slot_bytes, life.first, life.last});
        side_by_side = add_aligned(side_by_side, tg.regsts[size_t(r)].slot_bytes);
      }
      MemoryPlan layout = plan_offsets(requests);
      if (layout.total >= side_by_side) continue;  // nothing to gain from ordering these tasks

      const int32_t arena = arena_of_device(tg, kind.first);
      for (size_t i = 0; i + 1 < tasks.size(); ++i)
        if (!joined(tg, tasks[i], tasks[i + 1])) add_control(tg, tasks[i], tasks[i + 1], group.slots, arena);
      group.frame = add_control(tg, tasks.front(), tasks.back(), group.slots, arena);
      for (RegstId r : members) tg.regsts[size_t(r)].share_group = int32_t(tg.share_groups.size());
      tg.share_groups.push_back(std::move(group));
      frames.push_back(FrameLayout{members, layout.offsets, layout.total});
    }
  }
  return frames;
}

}  // namespace of::compiler
