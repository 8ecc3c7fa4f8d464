// SPDX-License-Identifier: Apache-2.0
#include "schemas/shared_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"

namespace of::plan {
namespace {

bool reads(const Regst& r, TaskId t) { return std::find(r.consumers.begin(), r.consumers.end(), t) != r.consumers.end(); }

// A register that carries every piece from its producer to its readers, one slot per piece.
bool streamed_per_piece(const Regst& r) { return !r.persistent && r.acts_per_piece == 1; }

void check_group(const Plan& p, size_t gi, const std::string& path) {
  const ShareGroup& g = p.share_groups[gi];
  const std::string f = fmt::format("share_groups[{}]", gi);
  auto at = [&](const std::string& field) { return Where{.file = path, .field = f + field}; };
  if (g.slots < 1) fail(at(".slots"), "must be at least 1, is {}", g.slots);
  if (g.tasks.size() < 2) fail(at(".tasks"), "a share group orders at least two tasks, has {}", g.tasks.size());
  std::vector<int32_t> places(p.tasks.size(), -1);
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const TaskId t = g.tasks[i];
    if (t < 0 || size_t(t) >= p.tasks.size()) fail(at(fmt::format(".tasks[{}]", i)), "task {} does not exist", t);
    if (places[size_t(t)] >= 0) fail(at(fmt::format(".tasks[{}]", i)), "task {} appears twice", t);
    places[size_t(t)] = int32_t(i);
    if (p.tasks[size_t(t)].kind != TaskKind::compute) fail(at(fmt::format(".tasks[{}]", i)), "task {} is not a compute task", t);
    if (p.tasks[size_t(t)].device != p.tasks[size_t(g.tasks[0])].device)
      fail(at(fmt::format(".tasks[{}]", i)), "task {} is on another device than task {}", t, g.tasks[0]);
  }
  for (size_t i = 0; i + 1 < g.tasks.size(); ++i) {
    const Task& from = p.tasks[size_t(g.tasks[i])];
    const bool joined = std::any_of(from.out_regsts.begin(), from.out_regsts.end(), [&](RegstId r) {
      const Regst& x = p.regsts[size_t(r)];
      return x.producer == from.id && streamed_per_piece(x) && reads(x, g.tasks[i + 1]);
    });
    if (!joined) fail(at(fmt::format(".tasks[{}]", i + 1)), "no register orders task {} after task {}", g.tasks[i + 1], from.id);
  }
  if (g.frame < 0 || size_t(g.frame) >= p.regsts.size()) fail(at(".frame"), "register {} does not exist", g.frame);
  const Regst& frame = p.regsts[size_t(g.frame)];
  if (frame.producer != g.tasks.front() || frame.consumers != std::vector<TaskId>{g.tasks.back()} || !streamed_per_piece(frame) ||
      frame.slots < 1 || frame.slots > g.slots)
    fail(at(".frame"), "register {} must join task {} to task {} alone, streamed, with 1 to {} slots", g.frame, g.tasks.front(),
         g.tasks.back(), g.slots);
}

struct Extent {
  uint64_t begin, end;
  int32_t group;  // -1: bytes of its own
  int32_t slot;
  Lifetime life;
  std::string field;
};

}  // namespace

std::vector<int32_t> places_in_group(const Plan& p, const ShareGroup& g) {
  std::vector<int32_t> places(p.tasks.size(), -1);
  for (size_t i = 0; i < g.tasks.size(); ++i) places[size_t(g.tasks[i])] = int32_t(i);
  return places;
}

Lifetime lifetime_in_group(const Regst& r, const std::vector<int32_t>& places) {
  Lifetime life{places[size_t(r.producer)], places[size_t(r.producer)]};
  for (TaskId c : r.consumers) life.last = std::max(life.last, places[size_t(c)]);
  return life;
}

void check_shared_memory(const Plan& p, const std::string& path) {
  for (size_t gi = 0; gi < p.share_groups.size(); ++gi) check_group(p, gi, path);
  std::vector<std::vector<int32_t>> places;
  for (const ShareGroup& g : p.share_groups) places.push_back(places_in_group(p, g));

  std::vector<std::vector<Extent>> by_arena(p.arenas.size());
  for (const Variable& v : p.variables)
    if (v.bytes > 0) by_arena[size_t(v.arena)].push_back({v.offset, v.offset + v.bytes, -1, 0, {}, fmt::format("variables[{}]", v.id)});
  for (const Regst& r : p.regsts) {
    const std::string f = fmt::format("regsts[{}]", r.id);
    Lifetime life;
    if (r.share_group >= 0) {
      if (size_t(r.share_group) >= p.share_groups.size())
        fail(Where{.file = path, .field = f + ".share_group"}, "share group {} does not exist", r.share_group);
      const ShareGroup& g = p.share_groups[size_t(r.share_group)];
      const std::vector<int32_t>& at = places[size_t(r.share_group)];
      if (r.slots != g.slots || !streamed_per_piece(r))
        fail(Where{.file = path, .field = f + ".share_group"}, "a shared register is streamed with its group's {} slots", g.slots);
      if (at[size_t(r.producer)] < 0) fail(Where{.file = path, .field = f + ".producer"}, "task {} is not in share group {}", r.producer, r.share_group);
      for (TaskId c : r.consumers)
        if (at[size_t(c)] <= at[size_t(r.producer)])
          fail(Where{.file = path, .field = f + ".consumers"}, "task {} does not come after the producer in share group {}", c, r.share_group);
      if (p.arenas[size_t(r.arena)].device != p.tasks[size_t(g.tasks[0])].device)
        fail(Where{.file = path, .field = f + ".arena"}, "a shared register lives on its group's device");
      life = lifetime_in_group(r, at);
    }
    if (r.slot_bytes == 0) continue;
    for (size_t s = 0; s < r.offsets.size(); ++s)
      by_arena[size_t(r.arena)].push_back(
          {r.offsets[s], r.offsets[s] + r.slot_bytes, r.share_group, int32_t(s), life, fmt::format("{}.offsets[{}]", f, s)});
  }
  auto may_share = [](const Extent& a, const Extent& b) {
    return a.group >= 0 && a.group == b.group && a.slot == b.slot && (a.life.last < b.life.first || b.life.last < a.life.first);
  };
  for (size_t a = 0; a < by_arena.size(); ++a) {
    std::vector<Extent>& extents = by_arena[a];
    std::sort(extents.begin(), extents.end(), [](const Extent& x, const Extent& y) { return x.begin < y.begin; });
    std::vector<const Extent*> open;  // extents that may still overlap the next one
    for (const Extent& e : extents) {
      std::erase_if(open, [&](const Extent* o) { return o->end <= e.begin; });
      for (const Extent* o : open)
        if (!may_share(*o, e))
          fail(Where{.file = path, .field = e.field}, "[{}, {}) overlaps {} [{}, {}) in arena {}, and nothing orders their uses", e.begin,
               e.end, o->field, o->begin, o->end, a);
      open.push_back(&e);
    }
  }
}

}  // namespace of::plan
