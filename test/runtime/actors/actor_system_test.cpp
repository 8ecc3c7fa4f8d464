// SPDX-License-Identifier: Apache-2.0
// The CAF runtime end to end on a small chain: results arrive in order, and a failing task stops
// every actor with its message instead of hanging.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "runtime/actors/actions.h"
#include "runtime/actors/actor_system.h"
#include "runtime/actors/chain_plan.h"

using namespace of;
using namespace of::runtime;

namespace {

struct Run {
  plan::Plan p;
  std::vector<uint8_t> arena;
  std::vector<float> inputs, outputs;
  std::unique_ptr<SourceAction> source;
  std::unique_ptr<SinkAction> sink;
  std::vector<std::unique_ptr<Action>> middle;
  std::vector<std::unique_ptr<TaskState>> tasks;

  Run(int stages, int64_t pieces, int fail_stage, int64_t fail_piece) : p(testing::chain(stages, 2)), arena(p.arenas[0].bytes), inputs(size_t(pieces)), outputs(size_t(pieces), -1) {
    for (int64_t i = 0; i < pieces; ++i) inputs[size_t(i)] = float(i);
    source = std::make_unique<SourceAction>(std::vector<SourceAction::Feed>{{reinterpret_cast<const uint8_t*>(inputs.data()), pieces, 4, 0, 4}});
    sink = std::make_unique<SinkAction>(std::vector<SinkAction::Collect>{{reinterpret_cast<uint8_t*>(outputs.data()), pieces, 4}});
    uint8_t* arenas[] = {arena.data()};
    for (int t = 0; t <= stages + 1; ++t) {
      Action* a = source.get();
      if (t == stages + 1) a = sink.get();
      if (t > 0 && t <= stages) {
        if (t == fail_stage) middle.push_back(std::make_unique<testing::FailsAt>(fail_piece));
        else middle.push_back(std::make_unique<testing::AddOne>());
        a = middle.back().get();
      }
      tasks.push_back(std::make_unique<TaskState>(p, t, a, arenas, 2, pieces, 0));
    }
  }
};

}  // namespace

TEST_CASE("actor_system: a chain of CAF actors delivers every piece, on 1, 2 and 4 workers", "[runtime]") {
  for (int threads : {1, 2, 4}) {
    Run run(5, 200, -1, -1);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "sharing"});
    INFO("threads " << threads);
    CHECK(r.error.empty());
    for (int64_t i = 0; i < 200; ++i) REQUIRE(run.outputs[size_t(i)] == float(i + 5));
  }
}

TEST_CASE("actor_system: a failing task stops the whole run with its message, no hang", "[runtime]") {
  for (int threads : {1, 2, 4}) {
    Run run(5, 1000, 3, 17);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "stealing"});
    INFO("threads " << threads);
    CHECK(r.error == "task 3 (t3 AddOne): boom at piece 17");
    CHECK(run.outputs[999] == -1.0f);  // the run stopped early
  }
}

TEST_CASE("actor_system: a run that can never finish is stopped by the stall watchdog, naming the waiting tasks", "[runtime]") {
  Run run(5, 100, -1, -1);
  // Task 3 reads register 2, but its producer no longer sends it there: task 3 waits forever.
  run.p.regsts[2].consumers.clear();
  run.tasks.clear();
  uint8_t* arenas[] = {run.arena.data()};
  for (int t = 0; t <= 6; ++t) {
    Action* a = t == 0 ? static_cast<Action*>(run.source.get()) : t == 6 ? static_cast<Action*>(run.sink.get()) : run.middle[size_t(t - 1)].get();
    run.tasks.push_back(std::make_unique<TaskState>(run.p, t, a, arenas, 2, 100, 0));
  }
  ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{2, "sharing", 0.3});
  INFO(r.error);
  CHECK(r.error == "stalled: no task handled a message for 0.3 s: task 3 't3' waits for a piece of register 2 from task 2 't2', which has finished (it sends nothing more)");
}

TEST_CASE("actor_system: the stall watchdog leaves a run that makes progress alone", "[runtime]") {
  Run run(5, 200, -1, -1);
  ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{2, "sharing", 5});
  CHECK(r.error.empty());
  for (int64_t i = 0; i < 200; ++i) REQUIRE(run.outputs[size_t(i)] == float(i + 5));
}

namespace {

struct ThrowsNonStd final : Action {  // a library that throws something that is no std::exception
  void act(int64_t p, const void* const* in, void* const* out) override {
    if (p == 9) throw 42;
    *static_cast<float*>(out[0]) = *static_cast<const float*>(in[0]);
  }
};

}  // namespace

TEST_CASE("actor_system: an actor that dies without a std::exception still stops the run, naming its task", "[runtime]") {
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    Run run(5, 500, -1, -1);
    run.middle[1] = std::make_unique<ThrowsNonStd>();  // task 2
    uint8_t* arenas[] = {run.arena.data()};
    run.tasks[2] = std::make_unique<TaskState>(run.p, 2, run.middle[1].get(), arenas, 2, 500, 0);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "sharing"});
    INFO(r.error);
    CHECK(r.error.rfind("task 2 (t2 AddOne): its actor died before the task finished, without an error of ours (CAF: ", 0) == 0);
    CHECK(run.outputs[499] == -1.0f);
  }
}

