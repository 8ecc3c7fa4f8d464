// SPDX-License-Identifier: Apache-2.0
// When two buffers of an arena may share bytes: the one rule ofc places buffers by (compiler/
// passes/share_memory.cpp) and ofrun checks before it trusts a plan (runtime/plan/load.cpp).
//
// Actors work on different pieces at once, so a buffer is live for the whole run unless the plan
// orders its uses. A share group does, for compute tasks of one device:
// - Within a piece, registers order tasks: a reader acts after its producer has completed. Among
//   the group's tasks (ascending ids, which plans keep topological), register X is *before* Y
//   when every reader of X reaches Y's producer through streamed registers between the group's
//   tasks (a task that reads X and writes Y does not: it uses both at once).
// - Across pieces, every register of the group has `slots` slots and piece n uses slot
//   n mod slots (the producer's ring), so slot j of every register belongs to frame j. The
//   group's first task reaches every other, and its frame registers (at most `slots` slots each)
//   join it to ends that every task reaches: it starts piece n + slots only after every task of
//   the group has completed piece n, so frame j is free again before it is reused.
// - A register of the group may also be read by tasks outside it (another device's collective
//   part that reads it in place): each such reader must hand a streamed per-piece register to a
//   task of the group (its *proxy*, which then acts only after the reader has completed), and
//   counts as reaching what its proxy is or reaches. A proxy reaches an end, so frames stay safe.
// Two buffers may then share bytes only when both are slot j of registers of one group and one is
// before the other. `ofrun --slots` lowers every register's and frame's slot count alike, which
// keeps both properties.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "schemas/plan_model.h"

namespace of::plan {

// The most tasks a share group may have: its order is checked with a bit per pair of them.
inline constexpr size_t kMaxShareGroupTasks = 8192;
// And all groups of a plan together at most this many bits (64 MiB), whatever a plan file says.
inline constexpr uint64_t kMaxShareOrderBits = uint64_t(1) << 29;

// Which tasks of a group each task reaches within a piece (strictly: not itself), through
// streamed per-piece registers between the group's tasks. `tasks` ascending, at most
// kMaxShareGroupTasks, ids in range. Not for several threads at once: it keeps what it was asked
// of readers outside the group.
class GroupOrder {
 public:
  GroupOrder(const Plan& p, const std::vector<TaskId>& tasks);
  bool in_group(TaskId t) const { return place(t) >= 0; }
  bool reaches(TaskId from, TaskId to) const;
  // A task outside the group that hands a streamed per-piece register to a task of it.
  bool proxied(TaskId outside) const;
  // Every reader of x reaches y's producer (a reader outside the group through its proxies):
  // y may take x's bytes.
  bool before(const Regst& x, const Regst& y) const;
  // Every reader of x has completed before task `t` acts.
  bool read_before_task(const Regst& x, TaskId t) const;
  // The same for every task of the group at once: bit i (of word i / 64) is set when every reader
  // of x has completed before the group's i-th task acts. For comparing many pairs of registers
  // (placing a frame): one row per register, then a bit per pair.
  std::vector<uint64_t> read_before_row(const Regst& x) const;
  bool row_has(const std::vector<uint64_t>& row, TaskId t) const { return has_bit(row, place(t)); }
  // The row of the group's tasks reader `c` has completed before (a task of the group: those it
  // reaches; one outside: those its proxies are or reach, none without proxies). Valid for the
  // group's life. For comparing many pairs: looked up once per reader, then a bit per pair.
  const uint64_t* reader_row(TaskId c) const {
    const int32_t i = place(c);
    return i >= 0 ? &reach_[size_t(i) * words_] : proxy_row(c).data();
  }
  static bool has_bit(const uint64_t* row, int32_t i) { return i >= 0 && (row[size_t(i) / 64] >> (size_t(i) % 64)) & 1; }
  // The same by a task's index among the group's tasks (index_of; -1: no).
  static bool has_bit(const std::vector<uint64_t>& row, int32_t i) { return i >= 0 && (row[size_t(i) / 64] >> (size_t(i) % 64)) & 1; }
  int32_t index_of(TaskId t) const { return place(t); }
  // Tasks of the group no other task of it reaches (its sources) or that reach none (its ends).
  std::vector<TaskId> sources() const;
  std::vector<TaskId> ends() const;

 private:
  // Task t's index in tasks_, -1 outside the group. Searched, not tabled per plan task: a plan
  // of a million tasks on a thousand devices has thousands of groups.
  int32_t place(TaskId t) const {
    const auto it = std::lower_bound(tasks_.begin(), tasks_.end(), t);
    return it != tasks_.end() && *it == t ? int32_t(it - tasks_.begin()) : -1;
  }
  // Whether reader `c` has completed before `to` acts: c reaches it, or (outside the group) one
  // of c's proxies is or reaches it.
  bool read_before(TaskId c, TaskId to) const;
  // For a reader outside the group: the tasks of the group its proxies are or reach, as a row.
  // Computed when first asked (a collective part of another device, read for every pair of the
  // registers it reads), kept for the group's life.
  const std::vector<uint64_t>& proxy_row(TaskId outside) const;

  const Plan* plan_;
  std::vector<TaskId> tasks_;
  size_t words_;                       // 64-bit words per row
  std::vector<uint64_t> reach_;        // row i: the tasks task i reaches
  std::vector<uint8_t> has_pred_;      // per group task: some group task reaches it
  std::unordered_map<TaskId, std::vector<int32_t>> proxies_;               // per task outside: its proxies' indices
  mutable std::unordered_map<TaskId, std::vector<uint64_t>> proxy_rows_;  // proxy_row's answers
};

// Scratch room a task of a share group was given (scratch_room): per slot, its offset.
struct Scratch {
  TaskId task = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> offsets;
};

// Room for `bytes` of scratch that task `t` of share group `group` uses only while it acts (a
// kernel's reordered copies, its column matrix): per slot of the group, an arena offset (aligned)
// inside that slot's bytes of the group's registers, where none of them is in use while t acts
// (each is read before t acts, or written after t has completed), nor the scratch `placed` gave
// a task of the group that may act at the same time as t (one t neither reaches nor is reached
// by). That is the rule above with the scratch as a register t alone writes and reads, so it
// needs no room of its own in the plan. Nothing when t is not in the group or some slot has no
// such room. Needs a plan check_shared_memory accepted (so no buffer outside the group lies in
// those bytes).
std::optional<std::vector<uint64_t>> scratch_room(const Plan& p, const GroupOrder& order, int32_t group, TaskId t, uint64_t bytes,
                                                  const std::vector<Scratch>& placed = {});

// Refuses, in one line naming the file and field, a plan whose share groups are not ordered as
// above or whose buffers share bytes the rule does not allow. Needs task and register ids that
// have been checked to be in range, and streamed registers produced by lower task ids.
void check_shared_memory(const Plan& p, const std::string& path);

}  // namespace of::plan
