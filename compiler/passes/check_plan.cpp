// SPDX-License-Identifier: Apache-2.0
// check-plan: a plan that would deadlock or does not fit its devices is not written.
//
// Deadlock: streamed registers form no cycle (tasks are in topological order), so what could
// stall the actors is the interplay of finite slots, weight versions (a persistent register's
// update waits for every reader of the previous version) and accumulators (k acts per piece).
// That is decided by playing the actor protocol (schemas/task_state.h: the runtime's own code)
// on the plan without memory: two optimizer steps, or at least as many pieces as the
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
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/passes/pass.h"
#include "kernels/catalog.h"
#include "schemas/shared_memory.h"
#include "schemas/task_state.h"

namespace of::compiler {
namespace {

class NoAction final : public protocol::Action {
 public:
  void act(int64_t, const void* const*, void* const*) override {}
};

// Messages in the order they were sent, all tasks alike: one interleaving the actors may take.
class Queue final : public protocol::Outbox {
 public:
  struct Message {
    char kind;  // 'r' ready, 'f' free, 'e' end of stream
    TaskId to;
    RegstId regst;
    int32_t slot;
    int64_t piece;
  };
  void ready(TaskId to, RegstId regst, int32_t slot, int64_t piece) override { q.push_back({'r', to, regst, slot, piece}); }
  void free(TaskId to, RegstId regst, int32_t slot) override { q.push_back({'f', to, regst, slot, 0}); }
  void eos(TaskId to, RegstId regst) override { q.push_back({'e', to, regst, 0, 0}); }
  std::deque<Message> q;
};


// The three largest things in an arena, for a refusal: a weight (or optimizer state), a register
// with its own bytes (slots x slot), or a share group (the bytes its frames span).
std::string largest_items(const Compilation& c, int32_t arena) {
  const TaskGraph& tg = c.tasks;
  std::vector<std::pair<uint64_t, std::string>> items;
  for (const Variable& v : tg.variables)
    if (v.arena == arena) items.emplace_back(v.bytes, fmt::format("'{}' {}", v.key, human(v.bytes)));
  std::vector<std::pair<uint64_t, uint64_t>> spans(tg.share_groups.size(), {~uint64_t(0), 0});
  std::vector<size_t> shared(tg.share_groups.size(), 0);
  for (const Regst& r : tg.regsts) {
    if (r.arena != arena || r.slot_bytes == 0) continue;
    if (r.share_group >= 0) {
      auto& [lo, hi] = spans[size_t(r.share_group)];
      for (uint64_t off : r.offsets) lo = std::min(lo, off), hi = std::max(hi, off + r.slot_bytes);
      ++shared[size_t(r.share_group)];
      continue;
    }
    const std::string& producer = tg.tasks[size_t(r.producer)].name;
    const uint64_t bytes = r.slot_bytes * uint64_t(r.slots);
    items.emplace_back(bytes, r.persistent ? fmt::format("'{}' {}", producer, human(bytes))
                                           : fmt::format("the output of '{}' {} x {}", producer, r.slots, human(r.slot_bytes)));
  }
  for (size_t g = 0; g < spans.size(); ++g)
    if (shared[g] > 0)
      items.emplace_back(spans[g].second - spans[g].first,
                         fmt::format("{} outputs sharing {} from '{}' on", shared[g], human(spans[g].second - spans[g].first),
                                     tg.tasks[size_t(tg.share_groups[g].tasks.front())].name));
  std::stable_sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string out;
  for (size_t i = 0; i < items.size() && i < 3; ++i) out += (i ? ", " : "") + items[i].second;
  return out;
}

}  // namespace

std::string human(uint64_t b) {
  if (b >= (1ull << 50)) return fmt::format("{:.1f} PiB", double(b) / double(1ull << 50));
  if (b >= (1ull << 40)) return fmt::format("{:.1f} TiB", double(b) / double(1ull << 40));
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", double(b) / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", double(b) / double(1ull << 20));
  return fmt::format("{} bytes", b);
}

int64_t deadlock_check_pieces(const TaskGraph& tg, const CompileOptions& options) {
  int32_t most_slots = 1;
  for (const Regst& r : tg.regsts) most_slots = std::max(most_slots, r.slots);
  const int64_t k = options.train ? options.micro_batches : 1;
  return std::max<int64_t>(2 * k, (most_slots + 1) * k);
}

void check_no_deadlock(const TaskGraph& tg, int64_t pieces) {
  NoAction none;
  // The states' lists in one arena, released at once: a plan at scale has millions of tasks.
  std::pmr::monotonic_buffer_resource memory;
  std::vector<protocol::TaskState> tasks;
  std::vector<const protocol::TaskState*> views;
  tasks.reserve(tg.tasks.size());  // views point into it
  views.reserve(tg.tasks.size());
  for (const Task& t : tg.tasks) {
    tasks.emplace_back(tg, t.id, &none, nullptr, std::numeric_limits<int32_t>::max(), pieces, 0, nullptr, nullptr, &memory);
    views.push_back(&tasks.back());
  }
  Queue out;
  // The protocol asserts that a task's inputs carry the same piece; here that is a plan whose
  // producers and readers disagree on rates, named by the task.
  auto deliver = [&](TaskId id, const auto& step) {
    try {
      step(tasks[size_t(id)]);
    } catch (const std::logic_error& e) {
      fail({.field = tg.tasks[size_t(id)].name}, "the plan's registers are out of step (a producer's rate differs from its reader's): {}", e.what());
    }
  };
  for (const Task& t : tg.tasks) deliver(t.id, [&](protocol::TaskState& s) { s.start(out); });
  while (!out.q.empty()) {
    const Queue::Message m = out.q.front();
    out.q.pop_front();
    deliver(m.to, [&](protocol::TaskState& s) {
      if (m.kind == 'r') s.on_ready(m.regst, m.slot, m.piece, out);
      else if (m.kind == 'f') s.on_free(m.regst, m.slot, out);
      else s.on_eos(m.regst, out);
    });
  }
  const auto finished = std::count_if(views.begin(), views.end(), [](const protocol::TaskState* s) { return s->done(); });
  if (size_t(finished) == views.size()) return;
  fail({.field = "plan"}, "would deadlock after {} of {} tasks finished: {}", finished, views.size(), protocol::describe_stall(tg, views));
}

namespace {

// Every kernel the plan runs exists for its device's kind (kernels/kernel_list.def): a plan on GPUs
// with an op the CUDA backend lacks is refused here, naming the task, not when ofrun loads it.
void check_kernels_exist(const Compilation& c) {
  const TaskGraph& tg = c.tasks;
  for (const Task& t : tg.tasks) {
    if (t.kernel.empty() || (t.kind != TaskKind::compute && t.kind != TaskKind::collective)) continue;
    const auto& blobs = tg.regsts[size_t(t.out_regsts.at(0))].blobs;
    const DType dtype = blobs.empty() ? DType::f32 : blobs[0].desc.dtype;  // the loader's rule (runtime/plan/load.cpp)
    const int8_t kind = tg.devices[size_t(t.device)].kind;
    if (!kernels::kernel_exists(t.kernel, kernels::DeviceKind(kind), dtype))
      fail({.file = c.graph.source_file, .node = t.name, .op = t.op}, "no {} kernel '{}' for {} yet{}", kind == 0 ? "cpu" : "cuda", t.kernel,
           dtype_name(dtype), kind == 0 ? "" : " (the CUDA backend lacks it; --devices N:cpu has it)");
  }
}

}  // namespace

bool CheckPlan::run(Compilation& c) {
  const TaskGraph& tg = c.tasks;
  check_kernels_exist(c);
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
      // On GPUs --device-memory is each GPU's; the ranks' host devices hold only batches and outputs.
      if (tg.devices[size_t(a.device)].kind == c.options.device_kind && a.bytes > c.options.device_memory) {
        // What the user can do about it, where the plan says how much it would give.
        std::string options;
        if (c.options.train && c.options.dp > 1 && c.options.zero == 0) {
          uint64_t kept = 0;  // weights and optimizer state: the persistent registers here
          for (const Regst& r : tg.regsts) kept += r.arena == a.id && r.persistent ? r.slot_bytes : 0;
          options += fmt::format("; --zero 3 would split its {} of weights and optimizer state over the {} data-parallel devices", human(kept),
                                 c.options.dp);
        }
        if (c.options.train && !c.options.recompute) options += "; --recompute would make cheap activations again instead of keeping them";
        fail({.field = "--device-memory"}, "device {} needs {} ({} bytes, its arena's peak), more than the {} given; largest: {}{}",
             plan::device_label(tg, a.device), human(a.bytes), a.bytes, human(c.options.device_memory), largest_items(c, a.id), options);
      }
  if (!c.played_to_end) check_no_deadlock(tg, deadlock_check_pieces(tg, c.options));
  // The rule ofrun holds a plan to before it shares bytes: a plan ofc writes always passes it.
  try {
    plan::check_shared_memory(tg, c.graph.source_file);
  } catch (const Error& e) {
    OF_ASSERT(false, fmt::format("the memory plan breaks the sharing rule: {}", e.what()));
  }
  return false;
}

}  // namespace of::compiler
