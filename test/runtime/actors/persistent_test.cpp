// SPDX-License-Identifier: Apache-2.0
// Persistent registers under CAF on 1, 2 and 4 workers (test/runtime/actors/weight_plan.h): every
// reader of piece n sees version n, whatever the scheduling, and the run ends without a hang
// although the update task's register feeds a task that comes before it.
#include <catch2/catch.hpp>

#include "runtime/actors/actor_system.h"
#include "runtime/actors/weight_plan.h"

using namespace of;
using namespace of::runtime;

TEST_CASE("actor_system: persistent registers: every reader of piece n sees version n, on 1, 2 and 4 workers", "[runtime]") {
  constexpr int64_t kPieces = 400;
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    testing::WeightRun run(kPieces);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "stealing"});
    REQUIRE(r.error.empty());
    CHECK(run.u.aliased);
    for (int64_t n = 0; n < kPieces; ++n) {
      INFO("piece " << n);
      REQUIRE(run.y[size_t(n)] == float(n));
      REQUIRE(run.z[size_t(n)] == float(n));
    }
    CHECK(run.weight() == float(kPieces));  // one update per piece
    for (const auto& t : run.tasks) CHECK(t->done());
  }
}

TEST_CASE("actor_system: micro-batches: an accumulator feeds one update per step, readers see the step's version", "[runtime]") {
  constexpr int64_t kPieces = 200;
  constexpr int32_t kMicro = 4;
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    testing::WeightRun run(kPieces, kMicro);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "stealing"});
    REQUIRE(r.error.empty());
    for (int64_t n = 0; n < kPieces; ++n) {
      INFO("piece " << n);
      REQUIRE(run.y[size_t(n)] == float(kMicro * (n / kMicro)));
      REQUIRE(run.z[size_t(n)] == float(kMicro * (n / kMicro)));
    }
    CHECK(run.weight() == float(kPieces));
    for (const auto& t : run.tasks) CHECK(t->done());
  }
}

TEST_CASE("actor_system: micro-batches: a reader paced once per step reads each version once", "[runtime]") {
  // ZeRO 1/2's slice of a replica: paced by the step's summed gradient, it reads version s at
  // step s while the model's readers read it for each of the step's micro-batches.
  constexpr int64_t kPieces = 200;
  constexpr int32_t kMicro = 4;
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    testing::WeightRun run(kPieces, kMicro, true);
    ActorRunResult r = run_actors(run.p, run.tasks, SchedulerOptions{threads, "stealing"});
    REQUIRE(r.error.empty());
    for (int64_t n = 0; n < kPieces; ++n) REQUIRE(run.y[size_t(n)] == float(kMicro * (n / kMicro)));
    REQUIRE(run.z.size() == size_t(kPieces / kMicro));
    for (int64_t s = 0; s < kPieces / kMicro; ++s) {
      INFO("step " << s);
      REQUIRE(run.z[size_t(s)] == float(kMicro * s));
    }
    CHECK(run.weight() == float(kPieces));
    for (const auto& t : run.tasks) CHECK(t->done());
  }
}
