// SPDX-License-Identifier: Apache-2.0
// The CAF side of the runtime: one event-based actor per TaskState, messages in, TaskState calls
// out. An actor quits once its task is done; a failure (an exception escaping a handler, which
// means a broken invariant) sends stop to every actor so that nothing waits forever.
//
// In a multi-process run one more actor owns the UCX transport: task actors hand it their
// messages for other ranks' tasks, and a thread that sleeps on the network's event fd wakes it
// when something arrived. Another thread watches the bootstrap sockets: one that closes is a
// rank that died.
#include "runtime/actors/actor_system.h"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/error.h"
#include "runtime/actors/messages.h"
#include "runtime/transport/ucx_transport.h"

namespace of::runtime {
namespace {

// A counter one actor writes and the stall watchdog reads, on its own cache line.
struct alignas(64) Progress {
  std::atomic<int64_t> handled{0};
};

struct RunContext {
  std::vector<caf::actor> actors;  // by task id; filled before any actor is started; read-only afterwards
  caf::actor network;              // the transport actor (a multi-process run), else invalid
  caf::actor supervisor;           // watches the task actors
  const transport::RankRoutes* routes = nullptr;
  std::mutex error_mutex;          // taken only on failure
  std::string first_error;
  std::unique_ptr<Progress[]> progress;  // per task; null without a stall watchdog
  std::atomic<bool> closed{false};       // the actors are gone: what still arrives is dropped
  std::atomic<bool> tell_ranks{false};   // the failure was this rank's: the others must hear it
  std::atomic<bool>* failed = nullptr;   // SchedulerOptions::failed

  // Returns whether this was the first failure.
  bool record(const std::string& message) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!first_error.empty()) return false;
    first_error = message;
    if (failed) failed->store(true);
    return true;
  }
  bool remote(plan::TaskId t) const { return routes && !routes->local(t); }
  bool first_error_empty() {
    std::lock_guard<std::mutex> lock(error_mutex);
    return first_error.empty();
  }
  void stop_local() const {
    for (const caf::actor& a : actors)
      if (a) caf::anon_send(a, stop_atom::value);
  }
};

class CafOutbox final : public Outbox {
 public:
  CafOutbox(caf::event_based_actor* self, const RunContext* ctx, plan::TaskId task) : self_(self), ctx_(ctx), task_(task) {}
  void ready(plan::TaskId to, plan::RegstId regst, int32_t slot, int64_t piece) override {
    if (ctx_->remote(to)) self_->send(ctx_->network, net_ready_atom::value, task_, to, regst, slot, piece);
    else self_->send(ctx_->actors[size_t(to)], ready_atom::value, regst, slot, piece);
  }
  void free(plan::TaskId to, plan::RegstId regst, int32_t slot) override {
    if (ctx_->remote(to)) self_->send(ctx_->network, net_free_atom::value, task_, to, regst, slot);
    else self_->send(ctx_->actors[size_t(to)], free_atom::value, regst, slot);
  }
  void eos(plan::TaskId to, plan::RegstId regst) override {
    if (ctx_->remote(to)) self_->send(ctx_->network, net_eos_atom::value, task_, to, regst);
    else self_->send(ctx_->actors[size_t(to)], eos_atom::value, regst);
  }

 private:
  caf::event_based_actor* self_;
  const RunContext* ctx_;
  plan::TaskId task_;
};

// A late action's reports, as messages to its task's actor.
class CafCompletion final : public protocol::Completion {
 public:
  explicit CafCompletion(caf::actor to) : to_(std::move(to)) {}
  void completed() override { caf::anon_send(to_, completed_atom::value); }
  void failed(const std::string& why) override { caf::anon_send(to_, act_failed_atom::value, why); }

 private:
  caf::actor to_;
};

// Every failure goes through here: recorded once, every local actor stopped, every other rank
// told (by the transport actor).
void fail_run(RunContext* ctx, const std::string& message, bool tell_ranks) {
  if (!ctx->record(message)) return;
  if (ctx->closed.load()) return;
  ctx->stop_local();
  if (tell_ranks && ctx->routes) {
    ctx->tell_ranks.store(true);
    caf::anon_send(ctx->network, net_stop_atom::value, message);
  }
}

caf::behavior task_actor(caf::event_based_actor* self, RunContext* ctx, TaskState* task) {
  auto outbox = std::make_shared<CafOutbox>(self, ctx, task->id());
  // Every handler runs the protocol step, then quits when the task is done.
  Progress* progress = ctx->progress ? &ctx->progress[size_t(task->id())] : nullptr;
  auto failed = [self, ctx, task](const std::string& why) {
    const std::string where = ctx->routes ? fmt::format("rank {}: ", ctx->routes->rank()) : std::string();
    fail_run(ctx, fmt::format("{}task {} ({}): {}", where, task->id(), task->label(), why), true);
    self->quit();
  };
  auto step = [self, task, progress, failed](auto&& fn) {
    if (progress) progress->handled.fetch_add(1, std::memory_order_relaxed);
    try {
      fn();
    } catch (const std::exception& e) {
      failed(e.what());
      return;
    }
    if (task->done()) self->quit();
  };
  return {
      [=](start_atom) { step([&] { task->start(*outbox); }); },
      [=](ready_atom, int32_t regst, int32_t slot, int64_t piece) { step([&] { task->on_ready(regst, slot, piece, *outbox); }); },
      [=](free_atom, int32_t regst, int32_t slot) { step([&] { task->on_free(regst, slot, *outbox); }); },
      [=](eos_atom, int32_t regst) { step([&] { task->on_eos(regst, *outbox); }); },
      [=](completed_atom) { step([&] { task->on_completed(*outbox); }); },
      [=](act_failed_atom, const std::string& why) { failed(why); },
      [=](stop_atom) { self->quit(); },
  };
}

// Watches every task actor: one that goes down before its task is done while the run has not
// failed (an exception that is no std::exception escaped a handler, say) fails the run, so that
// the actors waiting for it do not wait forever. Quits when every task actor has.
caf::behavior supervisor(caf::event_based_actor* self, RunContext* ctx, const std::vector<std::unique_ptr<TaskState>>* tasks) {
  auto left = std::make_shared<size_t>(0);
  std::vector<std::pair<caf::actor_addr, plan::TaskId>> watched;
  for (size_t i = 0; i < ctx->actors.size(); ++i)
    if (ctx->actors[i]) {
      self->monitor(ctx->actors[i]);
      watched.emplace_back(ctx->actors[i].address(), plan::TaskId(i));
      ++*left;
    }
  self->set_down_handler([=](const caf::down_msg& down) {
    for (const auto& [addr, id] : watched)
      if (addr == down.source) {
        const TaskState& t = *(*tasks)[size_t(id)];
        // The actor is gone: its task's state is no longer written, and CAF's message
        // passing orders its last writes before this handler.
        if (!t.done() && ctx->first_error_empty()) {
          const std::string where = ctx->routes ? fmt::format("rank {}: ", ctx->routes->rank()) : std::string();
          fail_run(ctx, fmt::format("{}task {} ({}): its actor died before the task finished, without an error of ours (CAF: {})", where, id, t.label(), caf::to_string(down.reason)), true);
        }
      }
    if (--*left == 0) self->quit();
  });
  return {[](stop_atom) {}};
}

// Delivers what the network brought to the local task actors.
class NetworkReceiver final : public transport::UcxTransport::Receiver {
 public:
  explicit NetworkReceiver(RunContext* ctx) : ctx_(ctx) {}
  void deliver(const transport::WireHeader& h) override {
    if (ctx_->closed.load()) return;  // the end barrier: every task is done
    const caf::actor& to = ctx_->actors[size_t(h.to_task)];
    switch (h.kind) {
      case transport::WireKind::ready: caf::anon_send(to, ready_atom::value, h.regst, h.slot, h.piece); break;
      case transport::WireKind::free: caf::anon_send(to, free_atom::value, h.regst, h.slot); break;
      case transport::WireKind::eos: caf::anon_send(to, eos_atom::value, h.regst); break;
      case transport::WireKind::stop: break;  // failed() gets those
    }
  }
  void failed(const std::string& why) override { fail_run(ctx_, why, false); }

 private:
  RunContext* ctx_;
};

// Owns the transport: sends what task actors hand it, progresses it when the event thread says
// the network has events, and quits once every local task actor has.
caf::behavior network_actor(caf::event_based_actor* self, RunContext* ctx, transport::UcxTransport* net, const RemoteRun* remote,
                            int epoll_fd, size_t local_tasks) {
  auto left = std::make_shared<size_t>(local_tasks);
  self->set_down_handler([=](const caf::down_msg&) {
    if (--*left == 0) self->quit();
  });
  for (const caf::actor& a : ctx->actors)
    if (a) self->monitor(a);
  const int fd = net->fd();
  auto poll = [=] {
    net->progress();
    while (!net->arm()) net->progress();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u32 = 1;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev);
  };
  auto guarded = [=](auto&& fn) {
    try {
      fn();
      net->progress();  // pushes out what was just queued
    } catch (const std::exception& e) {
      fail_run(ctx, fmt::format("rank {}: network: {}", remote->routes->rank(), e.what()), true);
    }
  };
  return {
      [=](net_ready_atom, int32_t from, int32_t to, int32_t regst, int32_t slot, int64_t piece) {
        guarded([&] {
          const plan::Regst& r = remote->routes->plan().regsts[size_t(regst)];
          const uint8_t* data = remote->arenas[r.arena] + r.offsets[size_t(slot)];
          net->ready(from, to, regst, slot, piece, data, r.slot_bytes);
        });
      },
      [=](net_free_atom, int32_t from, int32_t to, int32_t regst, int32_t slot) { guarded([&] { net->free(from, to, regst, slot); }); },
      [=](net_eos_atom, int32_t from, int32_t to, int32_t regst) { guarded([&] { net->eos(from, to, regst); }); },
      [=](net_stop_atom, const std::string& why) { guarded([&] { net->stop_all(why); }); },
      [=](net_poll_atom) { guarded(poll); },
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
    const std::string where = ctx.routes ? fmt::format("rank {}: ", ctx.routes->rank()) : std::string();
    fail_run(&ctx, fmt::format("{}stalled: no task handled a message for {:.3g} s: {}", where, stall_seconds, protocol::describe_stall(plan, views)),
             true);
    return;
  }
}

// The threads of a multi-process run that wait on file descriptors: one wakes the transport
// actor when the network has events, and at least every millisecond (UCX's TCP transport here
// loses wakeups: after the first message a sleeping rank is not woken by the next, measured
// with benchmarks/transport_bench.cpp; shared memory's work); one reports a rank whose bootstrap
// socket closed. Both end when `stop_fd` is written.
struct Watchers {
  static constexpr int kTickMs = 1;
  int epoll_fd = -1, stop_fd = -1;
  std::thread network, peers;

  Watchers() {
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    stop_fd = eventfd(0, EFD_CLOEXEC);
    if (epoll_fd < 0 || stop_fd < 0) fail({}, "cannot create the network's event descriptors");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = 2;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_fd, &ev);
  }
  void start(RunContext* ctx, int net_fd, std::vector<std::pair<int, int32_t>> sockets) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u32 = 1;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, net_fd, &ev);
    network = std::thread([this, ctx] {
      for (;;) {
        epoll_event got[2];
        const int n = epoll_wait(epoll_fd, got, 2, kTickMs);
        bool stop = false;
        for (int i = 0; i < n; ++i) stop = stop || got[i].data.u32 == 2;
        if (stop) return;
        caf::anon_send(ctx->network, net_poll_atom::value);
      }
    });
    peers = std::thread([this, ctx, sockets] {
      std::vector<pollfd> pfs;
      for (const auto& [fd, rank] : sockets) pfs.push_back(pollfd{fd, POLLRDHUP, 0});
      pfs.push_back(pollfd{stop_fd, POLLIN, 0});
      for (;;) {
        if (::poll(pfs.data(), pfs.size(), -1) < 0) continue;
        if (pfs.back().revents) return;
        for (size_t i = 0; i + 1 < pfs.size(); ++i)
          if (pfs[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            fail_run(ctx, fmt::format("rank {} is gone (its connection closed: it exited or was killed)", sockets[i].second), true);
            pfs[i].fd = -1;  // said once
          }
      }
    });
  }
  void stop() {
    const uint64_t one = 1;
    if (stop_fd >= 0 && ::write(stop_fd, &one, sizeof one) < 0) {
    }
    if (network.joinable()) network.join();
    if (peers.joinable()) peers.join();
  }
  ~Watchers() {
    stop();
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (stop_fd >= 0) ::close(stop_fd);
  }
};

}  // namespace

ActorRunResult run_actors(const plan::Plan& plan, std::vector<std::unique_ptr<TaskState>>& tasks, const SchedulerOptions& options) {
  caf::actor_system_config cfg;
  size_t threads = options.threads > 0 ? size_t(options.threads) : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
  cfg.set("scheduler.policy", caf::atom_from_string(options.policy));
  RunContext ctx;
  const RemoteRun* remote = options.remote;
  ctx.routes = remote ? remote->routes : nullptr;
  ctx.failed = options.failed;
  if (options.stall_seconds > 0) ctx.progress = std::make_unique<Progress[]>(tasks.size());
  ActorRunResult result;
  // A multi-process run: the transport, then every rank meets and learns the others' addresses.
  NetworkReceiver receiver(&ctx);
  std::unique_ptr<transport::UcxTransport> net;
  std::unique_ptr<transport::Bootstrap> boot;
  std::optional<Watchers> watchers;
  if (remote) {
    net = std::make_unique<transport::UcxTransport>(*remote->routes, *remote->landing, receiver);
    boot = std::make_unique<transport::Bootstrap>(remote->boot, net->address());
    net->connect(boot->blobs());
    watchers.emplace();
  }
  {
    caf::actor_system system{cfg};
    size_t local = 0;
    ctx.actors.resize(tasks.size());
    std::vector<std::unique_ptr<CafCompletion>> completions;
    for (size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i]) {
        ctx.actors[i] = system.spawn(task_actor, &ctx, tasks[i].get());
        ++local;
        if (tasks[i]->completes_late()) {
          completions.push_back(std::make_unique<CafCompletion>(ctx.actors[i]));
          tasks[i]->bind(completions.back().get());
        }
      }
    ctx.supervisor = system.spawn(supervisor, &ctx, &tasks);  // held: an actor nobody holds is gone
    if (remote) {
      if (local == 0) fail({}, "rank {} runs no task of the plan", remote->routes->rank());
      ctx.network = system.spawn(network_actor, &ctx, net.get(), remote, watchers->epoll_fd, local);
      boot->barrier("start");  // every rank's actors exist: the first message may go
      watchers->start(&ctx, net->fd(), boot->peers());
      caf::anon_send(ctx.network, net_poll_atom::value);  // arms the event fd
    }
    auto begin = std::chrono::steady_clock::now();
    for (const caf::actor& a : ctx.actors)
      if (a) caf::anon_send(a, start_atom::value);
    std::atomic<bool> finished{false};
    std::thread watchdog;
    if (ctx.progress) watchdog = std::thread([&] { watch_for_stalls(ctx, plan, tasks, options.stall_seconds, finished); });
    system.await_all_actors_done();
    // A stopped run may leave acts in flight on a device; they end before their memory and
    // completions go (what they report then is dropped with the actors).
    for (const auto& t : tasks)
      if (t) t->drain();
    finished.store(true);
    if (watchdog.joinable()) watchdog.join();
    if (watchers) watchers->stop();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    ctx.closed.store(true);
    ctx.actors.clear();
    ctx.network = caf::actor();
    ctx.supervisor = caf::actor();
  }
  if (remote) {
    if (ctx.first_error.empty()) {
      // Every rank meets once its tasks are done: then every message any task needed has
      // arrived. Waiting, this rank keeps UCX going for ranks still receiving from it.
      try {
        boot->barrier("end", [&] { net->progress(); });
      } catch (const Error& e) {
        ctx.record(fmt::format("rank {}: {}", remote->routes->rank(), e.what()));
      }
    } else if (ctx.tell_ranks.load()) {
      net->stop_all(ctx.first_error);  // if the transport actor had not yet
      net->flush(1.0);                 // lets it go out before the endpoints close
    }
  }
  result.error = ctx.first_error;
  return result;
}

}  // namespace of::runtime
