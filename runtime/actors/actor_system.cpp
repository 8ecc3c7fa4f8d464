// SPDX-License-Identifier: Apache-2.0
// The CAF side of the runtime: one event-based actor per TaskState, messages in, TaskState calls
// out. An actor quits once its task is done; a failure (an exception escaping a handler, which
// means a broken invariant) sends stop to every actor so that nothing waits forever.
#include "runtime/actors/actor_system.h"

#include <caf/all.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/actors/messages.h"

namespace of::runtime {
namespace {

// A counter one actor writes and the stall watchdog reads, on its own cache line.
struct alignas(64) Progress {
  std::atomic<int64_t> handled{0};
};

struct RunContext {
  std::vector<caf::actor> actors;  // filled before any actor is started; read-only afterwards
  std::mutex error_mutex;          // taken only on failure
  std::string first_error;
  std::unique_ptr<Progress[]> progress;  // per task; null without a stall watchdog

  void record(const std::string& message) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (first_error.empty()) first_error = message;
  }
};

class CafOutbox final : public Outbox {
 public:
  CafOutbox(caf::event_based_actor* self, const RunContext* ctx) : self_(self), ctx_(ctx) {}
  void ready(plan::TaskId to, plan::RegstId regst, int32_t slot, int64_t piece) override {
    self_->send(ctx_->actors[size_t(to)], ready_atom::value, regst, slot, piece);
  }
  void free(plan::TaskId to, plan::RegstId regst, int32_t slot) override {
    self_->send(ctx_->actors[size_t(to)], free_atom::value, regst, slot);
  }
  void eos(plan::TaskId to, plan::RegstId regst) override {
    self_->send(ctx_->actors[size_t(to)], eos_atom::value, regst);
  }

 private:
  caf::event_based_actor* self_;
  const RunContext* ctx_;
};

caf::behavior task_actor(caf::event_based_actor* self, RunContext* ctx, TaskState* task) {
  auto outbox = std::make_shared<CafOutbox>(self, ctx);
  // Every handler runs the protocol step, then quits when the task is done.
  Progress* progress = ctx->progress ? &ctx->progress[size_t(task->id())] : nullptr;
  auto step = [self, ctx, task, progress](auto&& fn) {
    if (progress) progress->handled.fetch_add(1, std::memory_order_relaxed);
    try {
      fn();
    } catch (const std::exception& e) {
      ctx->record(fmt::format("task {} ({}): {}", task->id(), task->label(), e.what()));
      for (const caf::actor& a : ctx->actors) caf::anon_send(a, stop_atom::value);
      self->quit();
      return;
    }
    if (task->done()) self->quit();
  };
  return {
      [=](start_atom) { step([&] { task->start(*outbox); }); },
      [=](ready_atom, int32_t regst, int32_t slot, int64_t piece) { step([&] { task->on_ready(regst, slot, piece, *outbox); }); },
      [=](free_atom, int32_t regst, int32_t slot) { step([&] { task->on_free(regst, slot, *outbox); }); },
      [=](eos_atom, int32_t regst) { step([&] { task->on_eos(regst, *outbox); }); },
      [=](stop_atom) { self->quit(); },
  };
}

// Off the actors' path: every 50 ms, sums the messages handled; when the sum stands still for
// `stall_seconds`, records the stall (naming tasks not done) and stops every actor.
void watch_for_stalls(RunContext& ctx, const plan::Plan& plan, const std::vector<std::unique_ptr<TaskState>>& tasks, double stall_seconds,
                      const std::atomic<bool>& finished) {
  using Clock = std::chrono::steady_clock;
  int64_t last = -1;
  Clock::time_point since = Clock::now();
  while (!finished.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int64_t sum = 0;
    for (size_t i = 0; i < tasks.size(); ++i) sum += ctx.progress[i].handled.load(std::memory_order_relaxed);
    if (sum != last) {
      last = sum;
      since = Clock::now();
      continue;
    }
    if (std::chrono::duration<double>(Clock::now() - since).count() < stall_seconds) continue;
    // The actors have been idle for seconds: their states are quiescent and safe to read. Who
    // waits for whom is told as ofc's deadlock check tells it (the same protocol code).
    std::vector<const TaskState*> views;
    for (const auto& t : tasks) views.push_back(t.get());
    ctx.record(fmt::format("stalled: no task handled a message for {:.3g} s: {}", stall_seconds, protocol::describe_stall(plan, views)));
    for (const caf::actor& a : ctx.actors) caf::anon_send(a, stop_atom::value);
    return;
  }
}

}  // namespace

ActorRunResult run_actors(const plan::Plan& plan, std::vector<std::unique_ptr<TaskState>>& tasks, const SchedulerOptions& options) {
  caf::actor_system_config cfg;
  size_t threads = options.threads > 0 ? size_t(options.threads) : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
  cfg.set("scheduler.policy", caf::atom_from_string(options.policy));
  RunContext ctx;
  if (options.stall_seconds > 0) ctx.progress = std::make_unique<Progress[]>(tasks.size());
  ActorRunResult result;
  {
    caf::actor_system system{cfg};
    for (auto& t : tasks) {
      ctx.actors.push_back(system.spawn(task_actor, &ctx, t.get()));
    }
    auto begin = std::chrono::steady_clock::now();
    for (const caf::actor& a : ctx.actors) caf::anon_send(a, start_atom::value);
    std::atomic<bool> finished{false};
    std::thread watchdog;
    if (ctx.progress) watchdog = std::thread([&] { watch_for_stalls(ctx, plan, tasks, options.stall_seconds, finished); });
    system.await_all_actors_done();
    finished.store(true);
    if (watchdog.joinable()) watchdog.join();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    ctx.actors.clear();
  }
  result.error = ctx.first_error;
  return result;
}

}  // namespace of::runtime
