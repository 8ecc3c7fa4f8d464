// SPDX-License-Identifier: Apache-2.0
// The slot protocol, stepped by hand: TaskState's messages for a source -> task -> sink chain.
#include <catch2/catch.hpp>

#include <deque>

#include "runtime/actors/task_state.h"

using namespace of;
using namespace of::runtime;

namespace {

struct Msg {
  char kind;  // 'r' ready, 'f' free, 'e' eos
  plan::TaskId to;
  plan::RegstId regst;
  int32_t slot;
  int64_t piece;
  bool operator==(const Msg&) const = default;
};

struct Recorder final : Outbox {
  std::deque<Msg> sent;
  void ready(plan::TaskId to, plan::RegstId r, int32_t s, int64_t p) override { sent.push_back({'r', to, r, s, p}); }
  void free(plan::TaskId to, plan::RegstId r, int32_t s) override { sent.push_back({'f', to, r, s, -1}); }
  void eos(plan::TaskId to, plan::RegstId r) override { sent.push_back({'e', to, r, -1, -1}); }
};

struct CountingAction final : Action {
  std::vector<int64_t> pieces;
  void act(int64_t piece, const void* const*, void* const*) override { pieces.push_back(piece); }
};

plan::Plan chain(int32_t slots) {
  plan::Plan p;
  p.devices = {plan::DeviceRef{}};
  p.arenas = {plan::Arena{0, 0, 4096}};
  std::vector<uint64_t> off0, off1;
  for (int s = 0; s < slots; ++s) off0.push_back(uint64_t(64 * s)), off1.push_back(uint64_t(1024 + 64 * s));
  p.regsts = {plan::Regst{0, 0, {1}, slots, 64, 0, off0, {plan::Blob{0, {{4}, DType::f32}, 0, 16}}},
              plan::Regst{1, 1, {2}, slots, 64, 0, off1, {plan::Blob{1, {{4}, DType::f32}, 0, 16}}}};
  plan::Task src{.id = 0, .kind = plan::TaskKind::source};
  src.out_regsts = {0};
  plan::Task mid{.id = 1, .kind = plan::TaskKind::compute};
  mid.inputs = {plan::TaskInput{false, 0, 0}};
  mid.in_regsts = {0};
  mid.out_regsts = {1};
  plan::Task sink{.id = 2, .kind = plan::TaskKind::sink};
  sink.inputs = {plan::TaskInput{false, 1, 0}};
  sink.in_regsts = {1};
  p.tasks = {src, mid, sink};
  return p;
}

}  // namespace

TEST_CASE("task_state: a source fills every free slot, then waits for a free", "[runtime]") {
  plan::Plan p = chain(2);
  std::vector<uint8_t> arena(4096);
  uint8_t* arenas[] = {arena.data()};
  CountingAction act;
  TaskState source(p, 0, &act, arenas, 2, 5, 0);
  Recorder out;
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

TEST_CASE("task_state: with 1 slot a source waits for each free; eos after the last piece", "[runtime]") {
  plan::Plan p = chain(1);
  std::vector<uint8_t> arena(4096);
  uint8_t* arenas[] = {arena.data()};
  CountingAction act;
  TaskState source(p, 0, &act, arenas, 1, 2, 0);
  Recorder out;
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
  plan::Plan p = chain(1);
  std::vector<uint8_t> arena(4096);
  uint8_t* arenas[] = {arena.data()};
  CountingAction act;
  TaskState mid(p, 1, &act, arenas, 1, 0, 0);
  Recorder out;
  mid.on_ready(0, 0, 0, out);
  REQUIRE(out.sent.size() == 2);
  CHECK(out.sent[0] == Msg{'r', 2, 1, 0, 0});  // downstream first...
  CHECK(out.sent[1] == Msg{'f', 0, 0, 0, -1});  // ...then the input slot goes back
  out.sent.clear();
  mid.on_ready(0, 0, 1, out);  // piece 1 arrives but the only output slot is still lent
  CHECK(out.sent.empty());
  CHECK(act.pieces == std::vector<int64_t>{0});
  mid.on_eos(0, out);          // eos waits behind the pending piece
  CHECK(out.sent.empty());
  mid.on_free(1, 0, out);      // the sink returns slot 0: piece 1 runs, then eos goes on
  REQUIRE(out.sent.size() == 3);
  CHECK(out.sent[0] == Msg{'r', 2, 1, 0, 1});
  CHECK(out.sent[1] == Msg{'f', 0, 0, 0, -1});
  CHECK(out.sent[2] == Msg{'e', 2, 1, -1, -1});
  CHECK(act.pieces == std::vector<int64_t>{0, 1});
  mid.on_free(1, 0, out);
  CHECK(mid.done());
}

TEST_CASE("task_state: a sink is done after eos and no pending pieces", "[runtime]") {
  plan::Plan p = chain(2);
  std::vector<uint8_t> arena(4096);
  uint8_t* arenas[] = {arena.data()};
  CountingAction act;
  TaskState sink(p, 2, &act, arenas, 2, 0, 4);
  Recorder out;
  sink.on_ready(1, 0, 0, out);
  sink.on_ready(1, 1, 1, out);
  sink.on_eos(1, out);
  CHECK(sink.done());
  CHECK(act.pieces == std::vector<int64_t>{0, 1});
  CHECK(sink.trace().size() == 2);
  CHECK(out.sent.size() == 2);
}
