// SPDX-License-Identifier: Apache-2.0
// The CAF side of the runtime: one event-based actor per TaskState, messages in, TaskState calls
// out. An actor quits once its task is done; a failure (an exception escaping a handler, which
// means a broken invariant) sends stop to every actor so that nothing waits forever.
#include "runtime/actors/actor_system.h"

#include <caf/all.hpp>
#include <fmt/core.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/actors/messages.h"

namespace of::runtime {
namespace {

struct RunContext {
  std::vector<caf::actor> actors;  // filled before any actor is started; read-only afterwards
  std::mutex error_mutex;          // taken only on failure
  std::string first_error;

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
  auto step = [self, ctx, task](auto&& fn) {
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

}  // namespace

ActorRunResult run_actors(std::vector<std::unique_ptr<TaskState>>& tasks, const SchedulerOptions& options) {
  caf::actor_system_config cfg;
  size_t threads = options.threads > 0 ? size_t(options.threads) : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
  cfg.set("scheduler.policy", caf::atom_from_string(options.policy));
  RunContext ctx;
  ActorRunResult result;
  {
    caf::actor_system system{cfg};
    for (auto& t : tasks) {
      ctx.actors.push_back(system.spawn(task_actor, &ctx, t.get()));
    }
    auto begin = std::chrono::steady_clock::now();
    for (const caf::actor& a : ctx.actors) caf::anon_send(a, start_atom::value);
    system.await_all_actors_done();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    ctx.actors.clear();
  }
  result.error = ctx.first_error;
  return result;
}

}  // namespace of::runtime
