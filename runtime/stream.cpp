// SPDX-License-Identifier: Apache-2.0
#include "runtime/stream.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "common/error.h"
#include "runtime/actors/actor_system.h"
#include "runtime/actors/late_action.h"
#include "runtime/memory/heap_peak.h"
#include "runtime/memory/high_water.h"
#include "runtime/trace/chrome_trace.h"

namespace of::runtime {

std::vector<std::unique_ptr<Action>> actions_for(const PlanInstance& inst, const SourceMaker& source,
                                                 std::unique_ptr<Action> sink, const TaskActionMaker& snapshot,
                                                 int kernel_threads, kernels::GemmBackend gemm, kernels::RunCtx base) {
  std::vector<std::unique_ptr<Action>> out;
  for (const plan::Task& t : inst.plan().tasks) {
    if (!inst.runs(t)) {
      out.push_back(nullptr);
      continue;
    }
    switch (t.kind) {
      case plan::TaskKind::source: out.push_back(source(t)); break;
      case plan::TaskKind::sink: out.push_back(std::move(sink)); break;
      case plan::TaskKind::snapshot:
        if (!snapshot) fail({.file = inst.path()}, "a snapshot task belongs in a training plan");
        out.push_back(snapshot(t));
        break;
      case plan::TaskKind::compute:
      case plan::TaskKind::collective: out.push_back(inst.make_kernel_action(t, kernel_threads, gemm, base)); break;
      case plan::TaskKind::transfer: out.push_back(inst.make_transfer_action(t)); break;
    }
  }
  return out;
}

StreamResult stream(const PlanInstance& inst, std::vector<std::unique_ptr<Action>>& actions, int64_t pieces, const StreamOptions& o) {
  const plan::Plan& p = inst.plan();
  int32_t slots = 1;
  for (const plan::Regst& r : p.regsts) slots = std::max(slots, r.slots);
  if (o.slot_limit > 0) slots = std::min(slots, o.slot_limit);
  const int64_t trace_capacity = o.trace_path.empty() ? 0 : std::min(pieces, o.trace_pieces);
  // Per task, the in-order stream its acts run on (a GPU's), or -1: tasks on one stream tell each
  // other at once (schemas/task_state.h).
  std::vector<int32_t> streams(p.tasks.size(), -1);
  if (o.late_threads > 0 || o.emulate_gpus || inst.gpus()) {
    std::shared_ptr<LatePool> pool = o.late_threads > 0 ? std::make_shared<LatePool>(o.late_threads) : nullptr;
    std::vector<std::shared_ptr<LatePool>> stream_of(p.devices.size());  // per emulated GPU
    for (const plan::Task& t : p.tasks) {
      if (!actions[size_t(t.id)] || (t.kind != plan::TaskKind::compute && t.kind != plan::TaskKind::collective && t.kind != plan::TaskKind::transfer))
        continue;
      std::shared_ptr<LatePool> on = pool;
      if (const int32_t gpu = inst.gpu_of(t); gpu >= 0) {
        if (inst.gpus()) {
          on = inst.gpus()->launcher(gpu);  // its acts enqueue on the GPU's stream, from the GPU's one thread
        } else {  // an emulated GPU's stream: one thread running its acts in the order they come
          if (!stream_of[size_t(gpu)]) stream_of[size_t(gpu)] = std::make_shared<LatePool>(1, true, true);
          on = stream_of[size_t(gpu)];
        }
        streams[size_t(t.id)] = gpu;
      }
      if (on) actions[size_t(t.id)] = std::make_unique<LateAction>(std::move(actions[size_t(t.id)]), on, p, t.id, slots);
    }
  }
  std::vector<std::unique_ptr<TaskState>> tasks;
  for (const plan::Task& t : p.tasks)
    tasks.push_back(inst.runs(t) ? std::make_unique<TaskState>(p, t.id, actions[size_t(t.id)].get(), inst.arenas(), slots, pieces,
                                                               trace_capacity, inst.landing(), &streams)
                                 : nullptr);
  std::optional<RemoteRun> remote;
  if (inst.routes()) {
    remote.emplace(RemoteRun{.routes = inst.routes(), .landing = inst.landing(), .arenas = inst.arenas(), .boot = o.boot});
    if (o.boot.world != inst.routes()->world())
      fail({.file = inst.path()}, "is a plan of {} ranks, but this run's world is {}", inst.routes()->world(), o.boot.world);
    remote->boot.rank = inst.rank();
    // Without a job token (OF_JOB_TOKEN) the plan's checksum stands in: ranks of another job or
    // plan still cannot join, though anyone who has the plan could.
    if (remote->boot.token.empty()) remote->boot.token = fmt::format("plan-{:08x}", inst.plan_crc32());
    remote->boot.identity = fmt::format("plan {:08x}, of {}", inst.plan_crc32(), o.boot.identity);
  }
  std::optional<HeapPeakSampler> heap;
  if (o.memory_report) heap.emplace();
  ActorRunResult ran = run_actors(p, tasks, SchedulerOptions{o.threads, o.policy, o.stall_seconds, remote ? &*remote : nullptr, o.failed});
  const uint64_t heap_peak = heap ? heap->stop() : 0;
  if (!ran.error.empty()) fail({.file = inst.path()}, "run failed: {}", ran.error);
  StreamResult result{.seconds = ran.seconds};
  for (const auto& t : tasks)
    if (t) result.acts += t->acts();
  if (!o.trace_path.empty()) write_chrome_trace(o.trace_path, p, tasks);
  if (o.memory_report) {
    // GPU arenas are not read back: their marks print as not measured.
    std::vector<uint8_t*> host(inst.arenas(), inst.arenas() + p.arenas.size());
    std::vector<bool> gpu(p.arenas.size(), false);
    for (size_t a = 0; a < p.arenas.size(); ++a)
      if (inst.gpus() && inst.gpus()->holds(p.arenas[a].device)) gpu[a] = true, host[a] = nullptr;
    fmt::print("{}\n", high_water_line(p, arena_high_water(p, host.data()), gpu));
    // Everything this process holds for the run, arenas included, over what it held before.
    const uint64_t before = inst.heap_before_load() + inst.heap_data();
    if (!heap_counted())
      fmt::print("ofrun: heap high-water mark: not measured (this process's malloc does not report its use: a sanitizer build?)\n");
    else
      fmt::print("ofrun: heap high-water mark: {} bytes in use beyond what was before the plan loaded (arenas included), and {} more hold the data set\n",
                 heap_peak - std::min(heap_peak, before), inst.heap_data());
  }
  return result;
}

}  // namespace of::runtime
