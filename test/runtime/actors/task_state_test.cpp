// SPDX-License-Identifier: Apache-2.0
// The slot protocol, stepped by hand: TaskState's messages for a source -> task -> sink chain.
#include <catch2/catch.hpp>

#include <deque>

#include "runtime/actors/chain_plan.h"
#include "runtime/actors/recorder.h"
#include "runtime/actors/weight_plan.h"
#include "runtime/actors/protocol.h"

using namespace of;
using namespace of::runtime;
using testing::Msg;
using testing::Recorder;

namespace {

struct CountingAction final : Action {
  std::vector<int64_t> pieces;
  void act(int64_t piece, const void* const*, void* const*) override { pieces.push_back(piece); }
};

// One source -> one task -> one sink, with the buffers and recorders a test steps it with.
struct Harness {
  plan::Plan p;
  std::vector<uint8_t> arena;
  uint8_t* arenas[1];
  CountingAction act;
  Recorder out;
  explicit Harness(int32_t slots) : p(testing::chain(1, slots)), arena(p.arenas[0].bytes), arenas{arena.data()} {}
  TaskState task(plan::TaskId id, int64_t pieces = 0, int64_t trace = 0) {
    return TaskState(p, id, &act, arenas, p.regsts[0].slots, pieces, trace);
  }
};

}  // namespace

TEST_CASE("task_state: a source fills every free slot, then waits for a free", "[runtime]") {
  Harness h(2);
  TaskState source = h.task(0, 5);
  Recorder& out = h.out;
  source.start(out);
  REQUIRE(out.sent.size() == 2);
  CHECK(out.sent[0] == Msg{'r', 1, 0, 0, 0});
  CHECK(out.sent[1] == Msg{'r', 1, 0, 1, 1});
  out.sent.clear();
  source.on_free(0, 0, out);  // slot 0 back: piece 2 goes into it
  REQUIRE(out.sent.size() == 1);
  CHECK(out.sent[0] == Msg{'r', 1, 0, 0, 2});
  CHECK_FALSE(source.done());
}

TEST_CASE("task_state: with 1 slot a source waits for each free, eos after the last piece", "[runtime]") {
  Harness h(1);
  TaskState source = h.task(0, 2);
  Recorder& out = h.out;
  source.start(out);
  REQUIRE(out.sent.size() == 1);
  source.on_free(0, 0, out);
  REQUIRE(out.sent.size() == 3);
  CHECK(out.sent[1] == Msg{'r', 1, 0, 0, 1});
  CHECK(out.sent[2] == Msg{'e', 1, 0, -1, -1});  // eos follows the last piece at once
  CHECK_FALSE(source.done());                      // slot 0 is still lent out
  source.on_free(0, 0, out);
  CHECK(source.done());
}

TEST_CASE("task_state: a compute task needs a ready input and a free output slot", "[runtime]") {
  Harness h(1);
  TaskState mid = h.task(1);
  Recorder& out = h.out;
  mid.on_ready(0, 0, 0, out);
  REQUIRE(out.sent.size() == 2);
  CHECK(out.sent[0] == Msg{'r', 2, 1, 0, 0});  // downstream first...
  CHECK(out.sent[1] == Msg{'f', 0, 0, 0, -1});  // ...then the input slot goes back
  out.sent.clear();
  mid.on_ready(0, 0, 1, out);  // piece 1 arrives but the only output slot is still lent
  CHECK(out.sent.empty());
  CHECK(h.act.pieces == std::vector<int64_t>{0});
  mid.on_eos(0, out);          // eos waits behind the pending piece
  CHECK(out.sent.empty());
  mid.on_free(1, 0, out);      // the sink returns slot 0: piece 1 runs, then eos goes on
  REQUIRE(out.sent.size() == 3);
  CHECK(out.sent[0] == Msg{'r', 2, 1, 0, 1});
  CHECK(out.sent[1] == Msg{'f', 0, 0, 0, -1});
  CHECK(out.sent[2] == Msg{'e', 2, 1, -1, -1});
  CHECK(h.act.pieces == std::vector<int64_t>{0, 1});
  mid.on_free(1, 0, out);
  CHECK(mid.done());
}

TEST_CASE("task_state: a sink is done after eos and no pending pieces", "[runtime]") {
  Harness h(2);
  TaskState sink = h.task(2, 0, 4);
  Recorder& out = h.out;
  sink.on_ready(1, 0, 0, out);
  sink.on_ready(1, 1, 1, out);
  sink.on_eos(1, out);
  CHECK(sink.done());
  CHECK(h.act.pieces == std::vector<int64_t>{0, 1});
  CHECK(sink.trace().size() == 2);
  CHECK(out.sent.size() == 2);
}

TEST_CASE("task_state: an update told of its input before its own start waits for version 0 to be read", "[runtime]") {
  // Actors start in no set order: U (task 3 of weight_plan, w += g in place) may get g before its
  // start message. Version 0 of w is lent to F and L from the outset, so U must not write
  // version 1 over it until both have read it, and start() must still announce version 0 first.
  plan::Plan p = testing::weight_plan();
  std::vector<uint8_t> arena(p.arenas[0].bytes);
  uint8_t* arenas[] = {arena.data()};
  CountingAction act;
  Recorder out;
  TaskState u(p, 3, &act, arenas, 2, 0, 0);
  u.on_ready(2, 0, 0, out);  // g of piece 0, before start
  CHECK(act.pieces.empty());
  CHECK(out.sent.empty());
  u.start(out);
  REQUIRE(out.sent.size() == 2);
  CHECK(out.sent[0] == Msg{'r', 1, 3, 0, 0});  // version 0 to F and L
  CHECK(out.sent[1] == Msg{'r', 4, 3, 0, 0});
  out.sent.clear();
  u.on_free(3, 0, out);  // F has read version 0...
  CHECK(act.pieces.empty());
  u.on_free(3, 0, out);  // ...and L: now version 1
  CHECK(act.pieces == std::vector<int64_t>{0});
  REQUIRE(out.sent.size() == 3);
  CHECK(out.sent[0] == Msg{'r', 1, 3, 0, 1});
  CHECK(out.sent[1] == Msg{'r', 4, 3, 0, 1});
  CHECK(out.sent[2] == Msg{'f', 2, 2, 0, -1});
}
