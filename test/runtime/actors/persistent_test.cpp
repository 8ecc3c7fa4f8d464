// SPDX-License-Identifier: Apache-2.0
// Persistent registers (a weight updated in place every piece) under CAF on 1, 2 and 4 workers:
// every reader of piece n sees version n, whatever the scheduling, and the run ends without a
// hang although the update task's register feeds tasks that come before it.
//
//   source -> F (reads x and w: y = w) -> G (g = 1) -> U (w += g, in place) ; L (reads g and w:
//   z = w) ; sink (y, z).  w is persistent, read by F and L, written by U.
#include <catch2/catch.hpp>

#include <atomic>

#include "runtime/actors/actions.h"
#include "runtime/actors/actor_system.h"

using namespace of;
using namespace of::runtime;

namespace {

struct CopyInput final : Action {  // out[0] = in[k]
  size_t k;
  explicit CopyInput(size_t input) : k(input) {}
  void act(int64_t, const void* const* in, void* const* out) override { *static_cast<float*>(out[0]) = *static_cast<const float*>(in[k]); }
};
struct One final : Action {
  void act(int64_t, const void* const*, void* const* out) override { *static_cast<float*>(out[0]) = 1.0f; }
};
struct AddInPlace final : Action {  // in[0] is out[0] (own input); Catch2 is not thread-safe: note, check later
  std::atomic<bool> aliased{true};
  void act(int64_t, const void* const* in, void* const* out) override {
    if (in[0] != out[0]) aliased = false;
    *static_cast<float*>(out[0]) = *static_cast<const float*>(in[0]) + *static_cast<const float*>(in[1]);
  }
};

plan::Regst regst(int32_t id, int32_t producer, std::vector<int32_t> consumers, int32_t slots, uint64_t& offset) {
  plan::Regst r{.id = id, .producer = producer, .consumers = std::move(consumers), .slots = slots, .slot_bytes = 64};
  for (int s = 0; s < slots; ++s, offset += 64) r.offsets.push_back(offset);
  r.blobs = {plan::Blob{0, {{1}, DType::f32}, 0, 4}};
  return r;
}

plan::Task task(int32_t id, plan::TaskKind kind, std::vector<plan::TaskInput> inputs, std::vector<int32_t> in_regsts,
                std::vector<int32_t> out_regsts) {
  plan::Task t{.id = id, .kind = kind, .name = "t" + std::to_string(id), .op = "Test"};
  t.inputs = std::move(inputs);
  t.in_regsts = std::move(in_regsts);
  t.out_regsts = std::move(out_regsts);
  return t;
}

}  // namespace

TEST_CASE("persistent registers: every reader of piece n sees version n, on 1, 2 and 4 workers", "[runtime]") {
  using K = plan::InputKind;
  plan::Plan p;
  p.devices = {plan::DeviceRef{}};
  uint64_t offset = 0;
  p.regsts = {regst(0, 0, {1}, 2, offset),     // x
              regst(1, 1, {2, 5}, 2, offset),  // y = w
              regst(2, 2, {3, 4}, 2, offset),  // g
              regst(3, 3, {1, 4}, 1, offset),  // w (persistent)
              regst(4, 4, {5}, 2, offset)};    // z = w
  p.regsts[3].persistent = true;
  p.arenas = {plan::Arena{0, 0, offset}};
  p.tasks = {task(0, plan::TaskKind::source, {}, {}, {0}),
             task(1, plan::TaskKind::compute, {{K::regst, 0, 0}, {K::regst, 3, 0}}, {0, 3}, {1}),
             task(2, plan::TaskKind::compute, {{K::regst, 1, 0}}, {1}, {2}),
             task(3, plan::TaskKind::compute, {{K::own, 3, 0}, {K::regst, 2, 0}}, {2}, {3}),
             task(4, plan::TaskKind::compute, {{K::regst, 2, 0}, {K::regst, 3, 0}}, {2, 3}, {4}),
             task(5, plan::TaskKind::sink, {{K::regst, 1, 0}, {K::regst, 4, 0}}, {1, 4}, {})};
  constexpr int64_t kPieces = 400;
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    std::vector<uint8_t> arena(offset, 0);
    uint8_t* arenas[] = {arena.data()};
    std::vector<float> zeros(1, 0.0f), y(kPieces, -1), z(kPieces, -1);
    SourceAction source({{reinterpret_cast<const uint8_t*>(zeros.data()), 1, 4}});
    SinkAction sink({{reinterpret_cast<uint8_t*>(y.data()), kPieces, 4}, {reinterpret_cast<uint8_t*>(z.data()), kPieces, 4}});
    CopyInput f(1), l(1);
    One g;
    AddInPlace u;
    Action* actions[] = {&source, &f, &g, &u, &l, &sink};
    std::vector<std::unique_ptr<TaskState>> tasks;
    for (int t = 0; t < 6; ++t) tasks.push_back(std::make_unique<TaskState>(p, t, actions[t], arenas, 2, kPieces, 0));
    ActorRunResult r = run_actors(tasks, SchedulerOptions{threads, "stealing"});
    REQUIRE(r.error.empty());
    CHECK(u.aliased);
    for (int64_t n = 0; n < kPieces; ++n) {
      INFO("piece " << n);
      REQUIRE(y[size_t(n)] == float(n));
      REQUIRE(z[size_t(n)] == float(n));
    }
    // The weight holds its last version: one update per piece.
    CHECK(*reinterpret_cast<float*>(arena.data() + p.regsts[3].offsets[0]) == float(kPieces));
    for (const auto& t : tasks) CHECK(t->done());
  }
}
