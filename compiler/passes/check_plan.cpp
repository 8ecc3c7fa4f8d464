// SPDX-License-Identifier: Apache-2.0
// check-plan: a plan that would deadlock or does not fit its devices is not written.
//
// Deadlock: streamed registers form no cycle (tasks are in topological order), so what could
// stall the actors is the interplay of finite slots, weight versions (a persistent register's
// update waits for every reader of the previous version) and accumulators (k acts per piece).
// That is decided by playing the actor protocol (schemas/plan.fbs, runtime/actors/task_state.h)
// on the plan with abstract pieces: two optimizer steps, or at least as many pieces as the
// largest slot count plus one, so every slot is reused and every version is replaced. The
// protocol is deterministic in what it allows (only timing varies), so a stall here is a stall
// at run time; one that does not stall here cannot stall there for more pieces either, because
// after the first step every step starts from the same state of free slots and versions. A stall
// is reported as the cycle of waits: each task named with what it waits for from the next.
//
// Memory: every device's arena (the peak it ever holds: every slot has its own place) must fit
// in an address space (2^47 bytes) and, with --device-memory, in the memory given.
#include <algorithm>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

struct SimIn {
  RegstId regst;
  std::deque<std::pair<int32_t, int64_t>> ready;  // (slot, piece or version)
  bool persistent;
  int32_t per_version;
  bool eos = false;
};

struct SimOut {
  RegstId regst;
  std::vector<std::set<TaskId>> holders;  // per slot: consumers that have not freed it
  int32_t next = 0;
  bool persistent;
  int32_t acts_per_piece;
  int32_t group = 0;
};

struct SimTask {
  std::vector<SimIn> ins;
  std::vector<SimOut> outs;
  int64_t acts = 0, emitted = 0;
  bool source = false, finished = false;
};

class Simulator {
 public:
  Simulator(const TaskGraph& tg, int64_t pieces) : tg_(tg), pieces_(pieces), tasks_(tg.tasks.size()) {
    for (const Task& t : tg.tasks) {
      SimTask& s = tasks_[size_t(t.id)];
      s.source = t.kind == TaskKind::source;
      for (RegstId r : t.in_regsts)
        s.ins.push_back(SimIn{r, {}, tg.regsts[size_t(r)].persistent, tg.regsts[size_t(r)].pieces_per_version});
      for (RegstId r : t.out_regsts) {
        const Regst& reg = tg.regsts[size_t(r)];
        s.outs.push_back(SimOut{r, std::vector<std::set<TaskId>>(size_t(reg.slots)), 0, reg.persistent, reg.acts_per_piece});
      }
    }
  }

  // Plays until nothing can act; returns the tasks that did not finish.
  std::vector<TaskId> run() {
    for (const Task& t : tg_.tasks) {  // version 0 of every weight exists before anything acts
      for (SimOut& o : tasks_[size_t(t.id)].outs) {
        if (!o.persistent) continue;
        for (TaskId c : tg_.regsts[size_t(o.regst)].consumers) {
          o.holders[0].insert(c);
          in_of(c, o.regst).ready.emplace_back(0, 0);
        }
      }
    }
    bool progress = true;
    while (progress) {
      progress = false;
      for (const Task& t : tg_.tasks) progress = step(t.id) || progress;
    }
    // Done, as the runtime says it: end of stream passed on and every lent slot back.
    std::vector<TaskId> stuck;
    for (const Task& t : tg_.tasks) {
      const SimTask& s = tasks_[size_t(t.id)];
      bool lent = false;
      for (const SimOut& o : s.outs)
        for (const auto& h : o.holders) lent = lent || !h.empty();
      if (!s.finished || lent) stuck.push_back(t.id);
    }
    return stuck;
  }

  // What stuck task t waits for: (the task, why).
  std::pair<TaskId, std::string> blocker(TaskId t) const {
    const SimTask& s = tasks_[size_t(t)];
    for (const SimIn& in : s.ins)
      if (in.ready.empty() && !in.eos)
        return {tg_.regsts[size_t(in.regst)].producer, fmt::format("waits for a piece of register {} from", in.regst)};
    for (const SimOut& o : s.outs)
      for (size_t k = 0; k < o.holders.size(); ++k) {
        const size_t slot = s.finished ? k : size_t(o.next);
        if (!o.holders[slot].empty())
          return {*o.holders[slot].begin(), fmt::format("waits for slot {} of register {} to be freed by", slot, o.regst)};
      }
    return {-1, "waits for nothing it can name (finished its pieces but not its end of stream)"};
  }

 private:
  SimIn& in_of(TaskId t, RegstId r) {
    for (SimIn& in : tasks_[size_t(t)].ins)
      if (in.regst == r) return in;
    internal_error(__FILE__, __LINE__, "simulated message to a task that does not read the register");
  }

  void free_slot(TaskId producer, RegstId r, int32_t slot, TaskId by) {
    for (SimOut& o : tasks_[size_t(producer)].outs)
      if (o.regst == r) o.holders[size_t(slot)].erase(by);
  }

  bool step(TaskId id) {
    SimTask& s = tasks_[size_t(id)];
    if (s.finished) return false;
    bool acted = false;
    for (;;) {
      if (s.source && s.emitted >= pieces_) break;
      bool ready = std::all_of(s.ins.begin(), s.ins.end(), [](const SimIn& in) { return !in.ready.empty(); });
      for (const SimOut& o : s.outs) ready = ready && (o.group != 0 || o.holders[size_t(o.next)].empty());
      if (!ready) break;
      int64_t piece = s.emitted;
      for (const SimIn& in : s.ins)
        if (!in.persistent) {
          piece = in.ready.front().second;
          break;
        }
      for (const SimIn& in : s.ins)
        if (in.ready.front().second != (in.persistent ? piece / in.per_version : piece))
          fail({.field = tg_.tasks[size_t(id)].name}, "the plan's registers are out of step (a producer's rate differs from its reader's)");
      for (SimOut& o : s.outs) {
        if (++o.group < o.acts_per_piece) continue;
        o.group = 0;
        const int32_t slot = o.next;
        o.next = (o.next + 1) % int32_t(o.holders.size());
        for (TaskId c : tg_.regsts[size_t(o.regst)].consumers) {
          o.holders[size_t(slot)].insert(c);
          in_of(c, o.regst).ready.emplace_back(slot, o.persistent ? piece + 1 : piece / o.acts_per_piece);
        }
      }
      for (SimIn& in : s.ins) {
        if (in.persistent && piece % in.per_version != in.per_version - 1) continue;
        const int32_t slot = in.ready.front().first;
        in.ready.pop_front();
        free_slot(tg_.regsts[size_t(in.regst)].producer, in.regst, slot, id);
      }
      ++s.acts;
      if (s.source) ++s.emitted;
      acted = true;
    }
    // End of stream, as the runtime decides it.
    bool done = !s.source || s.emitted >= pieces_;
    for (const SimIn& in : s.ins) {
      if (in.persistent) done = done && in.ready.size() == 1 && in.ready.front().second == s.acts / in.per_version;
      else done = done && in.eos && in.ready.empty();
    }
    if (!done) return acted;
    s.finished = true;
    for (SimIn& in : s.ins) {
      if (!in.persistent) continue;
      free_slot(tg_.regsts[size_t(in.regst)].producer, in.regst, in.ready.front().first, id);
      in.ready.clear();
    }
    for (const SimOut& o : s.outs)
      if (!o.persistent)
        for (TaskId c : tg_.regsts[size_t(o.regst)].consumers) in_of(c, o.regst).eos = true;
    return true;
  }

  const TaskGraph& tg_;
  int64_t pieces_;
  std::vector<SimTask> tasks_;
};

std::string task_label(const TaskGraph& tg, TaskId t) { return fmt::format("task {} '{}'", t, tg.tasks[size_t(t)].name); }

std::string human(uint64_t b) {
  if (b >= (1ull << 50)) return fmt::format("{:.1f} PiB", double(b) / double(1ull << 50));
  if (b >= (1ull << 40)) return fmt::format("{:.1f} TiB", double(b) / double(1ull << 40));
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", double(b) / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(b) / double(1ull << 20));
  return fmt::format("{} bytes", b);
}

}  // namespace

void check_no_deadlock(const TaskGraph& tg, int64_t pieces) {
  Simulator sim(tg, pieces);
  const std::vector<TaskId> stuck = sim.run();
  if (stuck.empty()) return;
  // Follow the waits from the first stuck task until one repeats: that is the cycle.
  std::vector<TaskId> path;
  std::vector<std::string> why;
  TaskId t = stuck.front();
  while (t >= 0 && std::find(path.begin(), path.end(), t) == path.end()) {
    auto [next, reason] = sim.blocker(t);
    path.push_back(t);
    why.push_back(reason);
    t = next;
  }
  std::string cycle;
  const auto from = t >= 0 ? size_t(std::find(path.begin(), path.end(), t) - path.begin()) : 0;
  for (size_t i = from; i < path.size(); ++i)
    cycle += fmt::format("{} {} ", task_label(tg, path[i]), why[i]);
  cycle += t >= 0 ? task_label(tg, t) : "nothing";
  fail({.field = "plan"}, "would deadlock after {} of {} tasks finished: {}", tg.tasks.size() - stuck.size(), tg.tasks.size(), cycle);
}

bool CheckPlan::run(Compilation& c) {
  const TaskGraph& tg = c.tasks;
  int32_t most_slots = 1;
  for (const Regst& r : tg.regsts) most_slots = std::max(most_slots, r.slots);
  const int64_t k = c.options.train ? c.options.micro_batches : 1;
  for (const Arena& a : tg.arenas) {
    if (a.bytes <= kMaxArenaBytes) continue;
    const Regst* largest = nullptr;  // what to blame: the register with the largest slot there
    for (const Regst& r : tg.regsts)
      if (r.arena == a.id && (!largest || r.slot_bytes > largest->slot_bytes)) largest = &r;
    const std::string blame =
        largest ? fmt::format("; the largest register, {} x {} from task '{}'", largest->slots, human(largest->slot_bytes),
                              tg.tasks[size_t(largest->producer)].name)
                : "";
    fail({.file = c.graph.source_file}, "device {} needs {} ({} bytes, its arena's peak), more than the {} a process can address{}",
         plan::device_label(tg, a.device), human(a.bytes), a.bytes, human(kMaxArenaBytes), blame);
  }
  if (c.options.device_memory > 0)
    for (const Arena& a : tg.arenas)
      if (a.bytes > c.options.device_memory)
        fail({.field = "--device-memory"}, "device {} needs {} ({} bytes, its arena's peak), more than the {} given",
             plan::device_label(tg, a.device), human(a.bytes), a.bytes, human(c.options.device_memory));
  check_no_deadlock(tg, std::max<int64_t>(2 * k, (most_slots + 1) * k));
  return false;
}

}  // namespace of::compiler
