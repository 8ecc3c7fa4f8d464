// SPDX-License-Identifier: Apache-2.0
// Late completion: an act that ends after act() returns. Stepped by hand, a task tells nothing
// until its act completes, then ready before free, in act order, and its end of stream waits for
// every act in flight. Under CAF with the CPU test device (runtime/actors/late_action.h) the
// chain and the weight plans give what the synchronous runs give, a failing act stops the run
// naming its task, and acts really overlap.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <thread>
#include <stdexcept>

#include "runtime/actors/actions.h"
#include "runtime/actors/actor_system.h"
#include "runtime/actors/chain_plan.h"
#include "runtime/actors/recorder.h"
#include "runtime/actors/late_action.h"
#include "runtime/actors/weight_plan.h"

using namespace of;
using namespace of::runtime;
using testing::Msg;
using testing::Recorder;

namespace {

// Completes only when the test calls on_completed.
struct Deferred final : Action {
  std::vector<int64_t> pieces;
  void act(int64_t piece, const void* const*, void* const*) override { pieces.push_back(piece); }
  bool completes_late() const override { return true; }
};

// Another action, not owned (LateAction owns what it wraps).
struct Borrowed final : Action {
  Action& to;
  explicit Borrowed(Action& a) : to(a) {}
  void act(int64_t piece, const void* const* in, void* const* out) override { to.act(piece, in, out); }
};

// x + 1, written only after a pause: a reader told too early reads the old value.
struct SlowAddOne final : Action {
  void act(int64_t, const void* const* in, void* const* out) override {
    const float x = *static_cast<const float*>(in[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    *static_cast<float*>(out[0]) = x + 1.0f;
  }
};

// The chain, every task's action completing late on `pool`.
struct LateChain {
  plan::Plan p;
  std::vector<uint8_t> arena;
  std::vector<float> inputs, outputs;
  std::vector<std::unique_ptr<Action>> actions;
  std::vector<std::unique_ptr<TaskState>> tasks;

  LateChain(int stages, int64_t pieces, const std::shared_ptr<LatePool>& pool, int fail_stage = -1, int64_t fail_piece = -1)
      : p(testing::chain(stages, 2)), arena(p.arenas[0].bytes), inputs(size_t(pieces)), outputs(size_t(pieces), -1) {
    for (int64_t i = 0; i < pieces; ++i) inputs[size_t(i)] = float(i);
    uint8_t* arenas[] = {arena.data()};
    for (int t = 0; t <= stages + 1; ++t) {
      std::unique_ptr<Action> a;
      if (t == 0) a = std::make_unique<SourceAction>(std::vector<SourceAction::Feed>{{reinterpret_cast<const uint8_t*>(inputs.data()), pieces, 4, 0, 4}});
      else if (t == stages + 1) a = std::make_unique<SinkAction>(std::vector<SinkAction::Collect>{{reinterpret_cast<uint8_t*>(outputs.data()), pieces, 4}});
      else if (t == fail_stage) a = std::make_unique<testing::FailsAt>(fail_piece);
      else a = std::make_unique<SlowAddOne>();
      actions.push_back(std::make_unique<LateAction>(std::move(a), pool, p, t, 2));
      tasks.push_back(std::make_unique<TaskState>(p, t, actions.back().get(), arenas, 2, pieces, 0));
    }
  }
  int32_t most_in_flight() const {
    int32_t most = 0;
    for (const auto& a : actions) most = std::max(most, static_cast<const LateAction&>(*a).most_in_flight());
    return most;
  }
};

// weight_plan with every action completing late.
struct LateWeightRun {
  testing::WeightRun run;
  std::vector<std::unique_ptr<Action>> late;
  LateWeightRun(int64_t pieces, int32_t k, const std::shared_ptr<LatePool>& pool) : run(pieces, k) {
    uint8_t* arenas[] = {run.arena.data()};
    Action* inner[] = {run.source.get(), &run.f, &run.g, &run.u, &run.l, run.sink.get(), &run.a};
    run.tasks.clear();
    for (int t = 0; t < int(run.p.tasks.size()); ++t) {
      late.push_back(std::make_unique<LateAction>(std::make_unique<Borrowed>(*inner[t]), pool, run.p, t, 2));
      run.tasks.push_back(std::make_unique<TaskState>(run.p, t, late.back().get(), arenas, 2, pieces, 0));
    }
  }
};

}  // namespace

TEST_CASE("late_completion: a task takes its slots when it acts but tells nobody until the act completes", "[runtime]") {
  plan::Plan p = testing::chain(1, 2);
  std::vector<uint8_t> arena(p.arenas[0].bytes);
  uint8_t* arenas[] = {arena.data()};
  Deferred act;
  Recorder out;
  TaskState mid(p, 1, &act, arenas, 2, 0, 4);
  REQUIRE(mid.completes_late());
  mid.on_ready(0, 0, 0, out);
  mid.on_ready(0, 1, 1, out);
  CHECK(act.pieces == std::vector<int64_t>{0, 1});  // both in flight at once: one output slot each
  CHECK(mid.in_flight() == 2);
  CHECK(out.sent.empty());
  CHECK(mid.holds(0, 0));  // an act in flight still holds what it reads
  CHECK(mid.holds(0, 1));
  CHECK(mid.waiting_for({}).why == "waits for its act on piece 0 to complete");
  mid.on_eos(0, out);
  CHECK(out.sent.empty());  // eos waits for the acts in flight
  mid.on_completed(out);
  REQUIRE(out.sent.size() == 2);
  CHECK(out.sent[0] == Msg{'r', 2, 1, 0, 0});  // downstream first...
  CHECK(out.sent[1] == Msg{'f', 0, 0, 0, -1});  // ...then the input slot goes back
  CHECK_FALSE(mid.holds(0, 0));
  mid.on_completed(out);
  REQUIRE(out.sent.size() == 5);
  CHECK(out.sent[2] == Msg{'r', 2, 1, 1, 1});
  CHECK(out.sent[3] == Msg{'f', 0, 0, 1, -1});
  CHECK(out.sent[4] == Msg{'e', 2, 1, -1, -1});
  CHECK(mid.trace().size() == 2);
  CHECK_FALSE(mid.done());  // both output slots are still lent to the sink
  mid.on_free(1, 0, out);
  mid.on_free(1, 1, out);
  CHECK(mid.done());
}

TEST_CASE("late_completion: a task with every output slot in flight waits, and acts again once one completes and is freed", "[runtime]") {
  plan::Plan p = testing::chain(1, 1);
  std::vector<uint8_t> arena(p.arenas[0].bytes);
  uint8_t* arenas[] = {arena.data()};
  Deferred act;
  Recorder out;
  TaskState source(p, 0, &act, arenas, 1, 3, 0);
  source.start(out);
  CHECK(act.pieces == std::vector<int64_t>{0});
  CHECK(out.sent.empty());
  source.on_completed(out);
  REQUIRE(out.sent.size() == 1);
  CHECK(out.sent[0] == Msg{'r', 1, 0, 0, 0});
  CHECK(act.pieces.size() == 1);  // its only slot is lent out
  source.on_free(0, 0, out);
  CHECK(act.pieces == std::vector<int64_t>{0, 1});
  CHECK(out.sent.size() == 1);
  CHECK_THROWS(TaskState(p, 0, &act, arenas, 1, 3, 0).on_completed(out));  // nothing in flight
}

TEST_CASE("late_completion: a chain of late acts delivers every piece in order, on 1, 2 and 4 workers", "[runtime]") {
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    auto pool = std::make_shared<LatePool>(3);
    LateChain run(5, 300, pool);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "sharing"});
    REQUIRE(r.error.empty());
    for (int64_t i = 0; i < 300; ++i) REQUIRE(run.outputs[size_t(i)] == float(i + 5));
    CHECK(run.most_in_flight() == 2);  // some task had both its slots' acts in flight
    for (const auto& t : run.tasks) CHECK(t->done());
  }
}

TEST_CASE("late_completion: persistent registers and micro-batches: every reader of piece n still sees its version", "[runtime]") {
  constexpr int64_t kPieces = 200;
  for (int32_t k : {1, 4})
    for (int threads : {1, 2, 4}) {
      INFO("micro-batches " << k << ", threads " << threads);
      auto pool = std::make_shared<LatePool>(3);
      LateWeightRun late(kPieces, k, pool);
      ActorRunResult r = run_actors(late.run.p, late.run.tasks, SchedulerOptions{threads, "stealing"});
      REQUIRE(r.error.empty());
      CHECK(late.run.u.aliased);
      for (int64_t n = 0; n < kPieces; ++n) {
        INFO("piece " << n);
        REQUIRE(late.run.y[size_t(n)] == float(k * (n / k)));
        REQUIRE(late.run.z[size_t(n)] == float(k * (n / k)));
      }
      CHECK(late.run.weight() == float(kPieces));
      for (const auto& t : late.run.tasks) CHECK(t->done());
    }
}

TEST_CASE("late_completion: an act that fails on the device stops the run naming its task, no hang", "[runtime]") {
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    auto pool = std::make_shared<LatePool>(2);
    LateChain run(5, 1000, pool, 3, 17);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "stealing"});
    CHECK(r.error == "task 3 (t3 AddOne): boom at piece 17");
    CHECK(run.outputs[999] == -1.0f);
  }
}

namespace {

// Reports each act's end from inside its act(), before the LateAction that runs it has popped the
// act from its queue (a GPU stream that finishes at once, the launcher thread descheduled).
struct SelfCompleting final : Action {
  Completion* done = nullptr;
  std::vector<int64_t> pieces;
  std::atomic<bool> go{false};  // the first act waits until the test has every slot in flight
  void act(int64_t piece, const void* const*, void* const*) override {
    while (!go) std::this_thread::yield();
    pieces.push_back(piece);
    done->completed();
  }
  bool completes_late() const override { return true; }
  void bind(Completion* c) override { done = c; }
};

// What the task does: acts again as soon as one of its acts completes.
struct ActsAgain final : Completion {
  LateAction* late = nullptr;
  int64_t next = 0, total = 0;
  std::atomic<int64_t> ended{0};
  std::string error;
  const void* ins[4] = {};
  void* outs[4] = {};
  void act() { late->act(next++, ins, outs); }
  void completed() override {
    ++ended;
    if (next < total) act();
  }
  void failed(const std::string& why) override {
    error = why;
    ended = total;
  }
};

}  // namespace

TEST_CASE("late_completion: an inner action that reports its end before the queue pops the act does not overflow it", "[runtime]") {
  const plan::Plan p = testing::chain(1, 2);  // task 1: two slots, two acts in flight
  auto pool = std::make_shared<LatePool>(1, false);
  auto inner = std::make_unique<SelfCompleting>();
  SelfCompleting* seen = inner.get();
  LateAction late(std::move(inner), pool, p, 1, 2);
  ActsAgain task;
  task.late = &late;
  task.total = 200;
  late.bind(&task);
  task.act();  // every slot in flight, as the task keeps them
  task.act();
  seen->go = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (task.ended < task.total && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  late.drain();
  CHECK(task.error.empty());
  REQUIRE(seen->pieces.size() == 200);
  for (int64_t i = 0; i < 200; ++i) REQUIRE(seen->pieces[size_t(i)] == i);
}

TEST_CASE("late_completion: on an in-order stream a task tells its stream's consumer and producer at once, the others at completion", "[runtime]") {
  // source -> t1 -> t2 -> t3 -> sink with t1, t2 and t3 late; t1 and t2 on stream 7, t3 on stream 8.
  plan::Plan p = testing::chain(3, 2);
  std::vector<uint8_t> arena(p.arenas[0].bytes);
  uint8_t* arenas[] = {arena.data()};
  const std::vector<int32_t> streams = {-1, 7, 7, 8, -1};
  Deferred a1, a2;
  Recorder out;
  TaskState t1(p, 1, &a1, arenas, 2, 0, 0, nullptr, &streams);
  TaskState t2(p, 2, &a2, arenas, 2, 0, 0, nullptr, &streams);
  t1.on_ready(0, 0, 0, out);
  // t2 (same stream) hears at once; the source (no stream) gets its slot back only at completion.
  REQUIRE(out.sent.size() == 1);
  CHECK(out.sent[0] == Msg{'r', 2, 1, 0, 0});
  out.sent.clear();
  t2.on_ready(1, 0, 0, out);
  // t2 frees t1's slot at once (same stream); t3 (another stream) hears at completion.
  REQUIRE(out.sent.size() == 1);
  CHECK(out.sent[0] == Msg{'f', 1, 1, 0, -1});
  out.sent.clear();
  t2.on_completed(out);
  REQUIRE(out.sent.size() == 1);
  CHECK(out.sent[0] == Msg{'r', 3, 2, 0, 0});
  out.sent.clear();
  t1.on_completed(out);
  REQUIRE(out.sent.size() == 1);
  CHECK(out.sent[0] == Msg{'f', 0, 0, 0, -1});
  // Without streams the same task tells everything at completion.
  Deferred a;
  Recorder plain;
  TaskState t(p, 1, &a, arenas, 2, 0, 0);
  t.on_ready(0, 0, 0, plain);
  CHECK(plain.sent.empty());
}

namespace {

struct CountingCompletion final : Completion {
  std::atomic<int> completed_n{0}, failed_n{0};
  void completed() override { ++completed_n; }
  void failed(const std::string&) override { ++failed_n; }
};

struct Runs final : Action {  // counts its acts
  std::atomic<int> n{0};
  void act(int64_t, const void* const*, void* const*) override { ++n; }
};

}  // namespace

TEST_CASE("late_completion: a failed act on an in-order stream drops every act behind it on that stream, other tasks' too", "[runtime]") {
  // t1 and t2 of the chain share one stream; t1's act fails: t2's act queued behind it (told
  // early, it would read what t1 never wrote) neither runs nor completes.
  const plan::Plan p = testing::chain(2, 2);
  auto stream = std::make_shared<LatePool>(1, false, true);
  auto gate = std::make_shared<std::atomic<bool>>(false);
  struct Gated final : Action {  // fails, once the test has queued what follows it
    std::shared_ptr<std::atomic<bool>> go;
    void act(int64_t, const void* const*, void* const*) override {
      while (!*go) std::this_thread::yield();
      throw std::runtime_error("launch failed");
    }
  };
  auto failing = std::make_unique<Gated>();
  failing->go = gate;
  auto runs = std::make_unique<Runs>();
  Runs* second = runs.get();
  LateAction a(std::move(failing), stream, p, 1, 2), b(std::move(runs), stream, p, 2, 2);
  CountingCompletion ca, cb;
  a.bind(&ca);
  b.bind(&cb);
  const void* ins[4] = {};
  void* outs[4] = {};
  a.act(0, ins, outs);
  b.act(0, ins, outs);
  *gate = true;
  a.drain();
  b.drain();
  CHECK(ca.failed_n == 1);
  CHECK(ca.completed_n == 0);
  CHECK(second->n == 0);
  CHECK(cb.completed_n == 0);
  CHECK(cb.failed_n == 0);
  // An ordinary pool keeps the other action going (its acts were never told early).
  auto pool = std::make_shared<LatePool>(1, false);
  auto failing2 = std::make_unique<Gated>();
  failing2->go = gate;
  auto runs2 = std::make_unique<Runs>();
  Runs* other = runs2.get();
  LateAction c(std::move(failing2), pool, p, 1, 2), d(std::move(runs2), pool, p, 2, 2);
  CountingCompletion cc, cd;
  c.bind(&cc);
  d.bind(&cd);
  c.act(0, ins, outs);
  d.act(0, ins, outs);
  c.drain();
  d.drain();
  CHECK(cc.failed_n == 1);
  CHECK(other->n == 1);
  CHECK(cd.completed_n == 1);
}
