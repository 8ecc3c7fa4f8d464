// SPDX-License-Identifier: Apache-2.0
// check-plan's deadlock proof: real plans pass; a plan whose slot counts or rates cannot let the
// actors finish is refused with the cycle of waits named.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

static Compilation train_mlp(int32_t micro_batches, int32_t devices = 1, int32_t pp = 1) {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.optimizer = "sgd:lr=0.01,momentum=0.9";
  o.micro_batches = micro_batches;
  o.devices = devices;
  o.pp = pp;
  return compile_model(fixture("mlp.onnx"), o);  // runs check-plan
}

TEST_CASE("check_plan: compiled plans stream to the end", "[compiler]") {
  for (int32_t k : {1, 4}) {
    Compilation c = train_mlp(k);
    CHECK_NOTHROW(check_no_deadlock(c.tasks, 8 * k));
  }
  Compilation pipe = train_mlp(4, 2, 2);
  CHECK_NOTHROW(check_no_deadlock(pipe.tasks, 12));
}

TEST_CASE("check_plan: weights read at the wrong rate stall, and the cycle is named", "[compiler]") {
  // With 4 micro-batches the update runs once per 4 pieces; readers told that every piece has a
  // new version wait for version 1 after piece 0, which needs the whole step: a cycle.
  Compilation c = train_mlp(4);
  for (auto& r : c.tasks.regsts)
    if (r.persistent) r.pieces_per_version = 1;
  try {
    check_no_deadlock(c.tasks, 8);
    FAIL("a stalling plan passed");
  } catch (const of::Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("would deadlock") != std::string::npos);
    CHECK(m.find("waits for") != std::string::npos);
    CHECK(m.find("update/") != std::string::npos);  // the update is part of the cycle
  }
}

TEST_CASE("check_plan: an accumulator whose register the update never frees stalls", "[compiler]") {
  // Give the first accumulator's register a reader that never acts (a consumer with no task
  // state to free it): the accumulator's second step waits forever for its only slot.
  Compilation c = train_mlp(2);
  Regst* acc = nullptr;
  for (auto& r : c.tasks.regsts)
    if (r.acts_per_piece > 1) acc = acc ? acc : &r;
  REQUIRE(acc != nullptr);
  REQUIRE(acc->slots == 1);
  // The sink never reads it: it is not in the sink's inputs, so it never acts on it or frees it.
  const TaskId sink = TaskId(c.tasks.tasks.size() - 2);
  REQUIRE(c.tasks.tasks[size_t(sink)].kind == TaskKind::sink);
  acc->consumers.push_back(sink);
  c.tasks.tasks[size_t(sink)].in_regsts.push_back(acc->id);
  CHECK_THROWS_WITH(check_no_deadlock(c.tasks, 8), Catch::Contains("would deadlock") && Catch::Contains("accumulate/"));
}
