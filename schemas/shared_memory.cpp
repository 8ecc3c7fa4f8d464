// SPDX-License-Identifier: Apache-2.0
#include "schemas/shared_memory.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"

namespace of::plan {
namespace {

// A register that carries every piece from its producer to its readers, one slot per piece.
bool streamed_per_piece(const Regst& r) { return !r.persistent && r.acts_per_piece == 1; }

}  // namespace

GroupOrder::GroupOrder(const Plan& p, const std::vector<TaskId>& tasks)
    : plan_(&p), tasks_(tasks), words_((tasks.size() + 63) / 64) {
  reach_.assign(tasks.size() * words_, 0);
  has_pred_.assign(tasks.size(), 0);
  // Readers have higher ids than producers, so rows fill from the last task back.
  for (size_t i = tasks.size(); i-- > 0;) {
    uint64_t* row = &reach_[i * words_];
    for (RegstId r : p.tasks[size_t(tasks[i])].out_regsts) {
      const Regst& x = p.regsts[size_t(r)];
      if (x.producer != tasks[i] || !streamed_per_piece(x)) continue;
      for (TaskId c : x.consumers) {
        const int32_t j = place(c);
        if (j <= int32_t(i)) continue;  // outside the group (or not a later task: no path taken)
        has_pred_[size_t(j)] = 1;
        row[size_t(j) / 64] |= uint64_t(1) << (size_t(j) % 64);
        const uint64_t* from = &reach_[size_t(j) * words_];
        for (size_t w = 0; w < words_; ++w) row[w] |= from[w];
      }
    }
  }
  // The group's proxies, from the group's side: a task outside it may write to many groups (a
  // collective part of each device's gradient), so its own outputs are not searched per group.
  for (size_t j = 0; j < tasks.size(); ++j)
    for (RegstId r : p.tasks[size_t(tasks[j])].in_regsts) {
      const Regst& x = p.regsts[size_t(r)];
      if (streamed_per_piece(x) && !in_group(x.producer)) proxies_[x.producer].push_back(int32_t(j));
    }
}

bool GroupOrder::reaches(TaskId from, TaskId to) const {
  const int32_t i = place(from), j = place(to);
  if (i < 0 || j < 0) return false;
  return (reach_[size_t(i) * words_ + size_t(j) / 64] >> (size_t(j) % 64)) & 1;
}

bool GroupOrder::proxied(TaskId outside) const { return proxies_.contains(outside); }

const std::vector<uint64_t>& GroupOrder::proxy_row(TaskId outside) const {
  auto [it, fresh] = proxy_rows_.try_emplace(outside);
  if (!fresh) return it->second;
  std::vector<uint64_t>& row = it->second;
  row.assign(words_, 0);
  const auto proxies = proxies_.find(outside);
  if (proxies == proxies_.end()) return row;
  for (int32_t j : proxies->second) {
    row[size_t(j) / 64] |= uint64_t(1) << (size_t(j) % 64);
    const uint64_t* from = &reach_[size_t(j) * words_];
    for (size_t w = 0; w < words_; ++w) row[w] |= from[w];
  }
  return row;
}

bool GroupOrder::read_before(TaskId c, TaskId to) const {
  if (in_group(c)) return reaches(c, to);
  return in_group(to) && row_has(proxy_row(c), to);
}

bool GroupOrder::read_before_task(const Regst& x, TaskId t) const {
  return !x.consumers.empty() && std::all_of(x.consumers.begin(), x.consumers.end(), [&](TaskId c) { return read_before(c, t); });
}

std::vector<uint64_t> GroupOrder::read_before_row(const Regst& x) const {
  std::vector<uint64_t> row(words_, x.consumers.empty() ? 0 : ~uint64_t(0));
  for (TaskId c : x.consumers) {
    const uint64_t* from = reader_row(c);
    for (size_t w = 0; w < words_; ++w) row[w] &= from[w];
  }
  return row;
}

bool GroupOrder::before(const Regst& x, const Regst& y) const { return read_before_task(x, y.producer); }

std::optional<std::vector<uint64_t>> scratch_room(const Plan& p, const GroupOrder& order, int32_t group, TaskId t, uint64_t bytes,
                                                  const std::vector<Scratch>& placed) {
  if (group < 0 || size_t(group) >= p.share_groups.size() || !order.in_group(t) || bytes == 0) return std::nullopt;
  using Span = std::pair<uint64_t, uint64_t>;  // [begin, end)
  auto merged = [](std::vector<Span> v) {
    std::sort(v.begin(), v.end());
    std::vector<Span> out;
    for (const Span& x : v)
      if (!out.empty() && x.first <= out.back().second) out.back().second = std::max(out.back().second, x.second);
      else out.push_back(x);
    return out;
  };
  std::vector<uint64_t> rooms;
  for (int32_t s = 0; s < p.share_groups[size_t(group)].slots; ++s) {
    std::vector<Span> apart, busy;  // the bytes of registers not in use while t acts, and of those in use
    for (const Regst& r : p.regsts) {
      if (r.share_group != group || r.slot_bytes == 0 || size_t(s) >= r.offsets.size()) continue;
      const bool unused = order.read_before_task(r, t) || (r.producer != t && order.reaches(t, r.producer));
      (unused ? apart : busy).push_back({r.offsets[size_t(s)], r.offsets[size_t(s)] + r.slot_bytes});
    }
    for (const Scratch& x : placed)
      if (size_t(s) < x.offsets.size() && (x.task == t || (!order.reaches(x.task, t) && !order.reaches(t, x.task))))
        busy.push_back({x.offsets[size_t(s)], x.offsets[size_t(s)] + x.bytes});
    const std::vector<Span> taken = merged(std::move(busy));
    std::optional<uint64_t> found;
    for (const Span& a : merged(std::move(apart))) {
      // The pieces of `a` between the busy spans, lowest first.
      uint64_t from = a.first;
      for (size_t k = 0; k <= taken.size() && !found; ++k) {
        const uint64_t to = k < taken.size() ? std::min(a.second, taken[k].first) : a.second;
        if (k < taken.size() && taken[k].second <= from) continue;
        const uint64_t begin = align_up(from);
        if (to >= begin && to - begin >= bytes) found = begin;
        if (k < taken.size()) from = std::max(from, taken[k].second);
        if (from >= a.second) break;
      }
      if (found) break;
    }
    if (!found) return std::nullopt;
    rooms.push_back(*found);
  }
  return rooms;
}

std::vector<TaskId> GroupOrder::sources() const {
  std::vector<TaskId> out;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (!has_pred_[i]) out.push_back(tasks_[i]);
  return out;
}

std::vector<TaskId> GroupOrder::ends() const {
  std::vector<TaskId> out;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (std::all_of(&reach_[i * words_], &reach_[i * words_] + words_, [](uint64_t w) { return w == 0; })) out.push_back(tasks_[i]);
  return out;
}

namespace {

void check_group(const Plan& p, size_t gi, const std::string& path) {
  const ShareGroup& g = p.share_groups[gi];
  const std::string f = fmt::format("share_groups[{}]", gi);
  auto at = [&](const std::string& field) { return Where{.file = path, .field = f + field}; };
  if (g.slots < 1) fail(at(".slots"), "must be at least 1, is {}", g.slots);
  if (g.tasks.size() < 2 || g.tasks.size() > kMaxShareGroupTasks)
    fail(at(".tasks"), "a share group has 2 to {} tasks, this one {}", kMaxShareGroupTasks, g.tasks.size());
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const TaskId t = g.tasks[i];
    if (t < 0 || size_t(t) >= p.tasks.size()) fail(at(fmt::format(".tasks[{}]", i)), "task {} does not exist", t);
    if (i > 0 && t <= g.tasks[i - 1]) fail(at(fmt::format(".tasks[{}]", i)), "tasks are listed in ascending order, without repeats");
    if (p.tasks[size_t(t)].kind != TaskKind::compute && p.tasks[size_t(t)].kind != TaskKind::collective)
      fail(at(fmt::format(".tasks[{}]", i)), "task {} is not a compute or collective task", t);
    if (p.tasks[size_t(t)].device != p.tasks[size_t(g.tasks[0])].device)
      fail(at(fmt::format(".tasks[{}]", i)), "task {} is on another device than task {}", t, g.tasks[0]);
  }
  const GroupOrder order(p, g.tasks);
  for (size_t i = 1; i < g.tasks.size(); ++i)
    if (!order.reaches(g.tasks[0], g.tasks[i]))
      fail(at(fmt::format(".tasks[{}]", i)), "the group's first task, {}, does not reach task {}", g.tasks[0], g.tasks[i]);
  std::vector<TaskId> ends;
  for (size_t k = 0; k < g.frames.size(); ++k) {
    const RegstId id = g.frames[k];
    if (id < 0 || size_t(id) >= p.regsts.size()) fail(at(fmt::format(".frames[{}]", k)), "register {} does not exist", id);
    const Regst& frame = p.regsts[size_t(id)];
    if (frame.producer != g.tasks[0] || frame.consumers.size() != 1 || !order.in_group(frame.consumers[0]) || !streamed_per_piece(frame) ||
        frame.slots < 1 || frame.slots > g.slots)
      fail(at(fmt::format(".frames[{}]", k)), "register {} must join task {} to one task of the group, streamed, with 1 to {} slots", id,
           g.tasks[0], g.slots);
    ends.push_back(frame.consumers[0]);
  }
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const TaskId t = g.tasks[i];
    const bool framed = std::any_of(ends.begin(), ends.end(), [&](TaskId e) { return e == t || order.reaches(t, e); });
    if (!framed) fail(at(fmt::format(".tasks[{}]", i)), "task {} reaches no frame register's end: its pieces are not bounded", t);
  }
}

struct Extent {
  uint64_t begin, end;
  int32_t group;  // -1: bytes of its own
  int32_t slot;   // a register's slot, or a variable's id
  RegstId regst;  // -1: a variable
  // Named only for a refusal (a plan has hundreds of thousands of extents).
  std::string field() const {
    return regst >= 0 ? fmt::format("regsts[{}].offsets[{}]", regst, slot) : fmt::format("variables[{}]", slot);
  }
};

}  // namespace

void check_shared_memory(const Plan& p, const std::string& path) {
  // Each group's order takes a bit per pair of its tasks: a plan may not make that unbounded.
  uint64_t bits = 0;
  for (const ShareGroup& g : p.share_groups) bits += uint64_t(std::min(g.tasks.size(), kMaxShareGroupTasks + 1)) * g.tasks.size();
  if (bits > kMaxShareOrderBits)
    fail(Where{.file = path, .field = "share_groups"}, "its groups' orders would take {} bits, more than {}", bits, kMaxShareOrderBits);
  for (size_t gi = 0; gi < p.share_groups.size(); ++gi) check_group(p, gi, path);
  std::vector<GroupOrder> orders;
  orders.reserve(p.share_groups.size());
  for (const ShareGroup& g : p.share_groups) orders.emplace_back(p, g.tasks);

  std::vector<std::vector<Extent>> by_arena(p.arenas.size());
  for (const Variable& v : p.variables)
    if (v.bytes > 0) by_arena[size_t(v.arena)].push_back({v.offset, v.offset + v.bytes, -1, v.id, -1});
  for (const Regst& r : p.regsts) {
    if (r.share_group >= 0) {
      auto at = [&](const std::string& field) { return Where{.file = path, .field = fmt::format("regsts[{}]{}", r.id, field)}; };
      if (size_t(r.share_group) >= p.share_groups.size()) fail(at(".share_group"), "share group {} does not exist", r.share_group);
      const ShareGroup& g = p.share_groups[size_t(r.share_group)];
      const GroupOrder& order = orders[size_t(r.share_group)];
      if (r.slots != g.slots || !streamed_per_piece(r) || r.consumers.empty())
        fail(at(".share_group"), "a shared register is streamed, has readers and its group's {} slots", g.slots);
      if (!order.in_group(r.producer)) fail(at(".producer"), "task {} is not in share group {}", r.producer, r.share_group);
      for (TaskId c : r.consumers)
        if (!order.in_group(c) && !order.proxied(c))
          fail(at(".consumers"), "task {} is not in share group {}, nor hands a streamed register to a task of it", c, r.share_group);
      if (p.arenas[size_t(r.arena)].device != p.tasks[size_t(g.tasks[0])].device)
        fail(at(".arena"), "a shared register lives on its group's device");
    }
    if (r.slot_bytes == 0) continue;
    for (size_t s = 0; s < r.offsets.size(); ++s)
      by_arena[size_t(r.arena)].push_back({r.offsets[s], r.offsets[s] + r.slot_bytes, r.share_group, int32_t(s), r.id});
  }
  // The sweep below compares every pair of overlapping extents, many per register: each shared
  // register's producer (its index in its group) and its readers' rows are looked up once, so
  // that a pair costs a bit per reader (GroupOrder::before, without its searches).
  std::vector<int32_t> producer_at(p.regsts.size(), -1);
  std::vector<size_t> rows_from(p.regsts.size() + 1, 0);
  std::vector<const uint64_t*> reader_rows;
  for (size_t i = 0; i < p.regsts.size(); ++i) {
    const Regst& r = p.regsts[i];
    if (r.share_group >= 0) {
      const GroupOrder& order = orders[size_t(r.share_group)];
      producer_at[i] = order.index_of(r.producer);
      for (TaskId c : r.consumers) reader_rows.push_back(order.reader_row(c));
    }
    rows_from[i + 1] = reader_rows.size();
  }
  auto before = [&](RegstId x, RegstId y) {  // GroupOrder::before(x, y)
    const size_t from = rows_from[size_t(x)], to = rows_from[size_t(x) + 1];
    const int32_t at = producer_at[size_t(y)];
    if (from == to) return false;
    for (size_t k = from; k < to; ++k)
      if (!GroupOrder::has_bit(reader_rows[k], at)) return false;
    return true;
  };
  auto may_share = [&](const Extent& a, const Extent& b) {
    if (a.group < 0 || a.group != b.group || a.slot != b.slot || a.regst == b.regst) return false;
    return before(a.regst, b.regst) || before(b.regst, a.regst);
  };
  for (size_t a = 0; a < by_arena.size(); ++a) {
    std::vector<Extent>& extents = by_arena[a];
    std::sort(extents.begin(), extents.end(), [](const Extent& x, const Extent& y) { return x.begin < y.begin; });
    std::vector<const Extent*> open;  // extents that may still overlap the next one
    for (const Extent& e : extents) {
      std::erase_if(open, [&](const Extent* o) { return o->end <= e.begin; });
      for (const Extent* o : open)
        if (!may_share(*o, e))
          fail(Where{.file = path, .field = e.field()}, "[{}, {}) overlaps {} [{}, {}) in arena {}, and nothing orders their uses", e.begin,
               e.end, o->field(), o->begin, o->end, a);
      open.push_back(&e);
    }
  }
}

}  // namespace of::plan
