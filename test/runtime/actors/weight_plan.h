// SPDX-License-Identifier: Apache-2.0
// A plan with a persistent register (a weight updated in place every piece), for protocol tests:
//
//   source -> F (reads x and w: y = w) -> G (g = 1) -> U (w += g, in place) ; L (reads g and w:
//   z = w) ; sink (y, z).  w is persistent, read by F and L (F comes before its producer U).
//
// Every reader of piece n must see version n: y[n] == z[n] == n.
//
// With k micro-batches, an accumulator A (task 6) sits between G and U: it sums k pieces of g
// into one slot (acts_per_piece k) and U runs once per k pieces; F and L read each version for k
// pieces (pieces_per_version k). Then y[n] == z[n] == k * floor(n / k).
//
// With `once` (and k > 1), L reads A's sum instead of g, once per step, and w once per version
// (Task::once_per_version), as ZeRO 1/2's slice of a replica does, and records what it read
// itself (no z register: the sink would wait for z[n] beside y[n], which only comes k pieces on):
// z[s] == k * s for step s.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/actors/actions.h"
#include "runtime/actors/protocol.h"
#include "schemas/plan_model.h"

namespace of::runtime::testing {

struct CopyInput final : Action {  // out[0] = in[k]
  size_t k;
  explicit CopyInput(size_t input) : k(input) {}
  void act(int64_t, const void* const* in, void* const* out) override { *static_cast<float*>(out[0]) = *static_cast<const float*>(in[k]); }
};
struct Record final : Action {  // (*out)[piece] = in[k]
  std::vector<float>* out;
  size_t k;
  Record(std::vector<float>* to, size_t input) : out(to), k(input) {}
  void act(int64_t piece, const void* const* in, void* const*) override { (*out)[size_t(piece)] = *static_cast<const float*>(in[k]); }
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

inline plan::Regst regst(int32_t id, int32_t producer, std::vector<int32_t> consumers, int32_t slots, uint64_t& offset) {
  plan::Regst r{.id = id, .producer = producer, .consumers = std::move(consumers), .slots = slots, .slot_bytes = 64};
  for (int s = 0; s < slots; ++s, offset += 64) r.offsets.push_back(offset);
  r.blobs = {plan::Blob{0, {{1}, DType::f32}, 0, 4}};
  return r;
}

inline plan::Task task(int32_t id, plan::TaskKind kind, std::vector<plan::TaskInput> inputs, std::vector<int32_t> in_regsts,
                std::vector<int32_t> out_regsts) {
  plan::Task t{.id = id, .kind = kind, .name = "t" + std::to_string(id), .op = "Test"};
  t.inputs = std::move(inputs);
  t.in_regsts = std::move(in_regsts);
  t.out_regsts = std::move(out_regsts);
  return t;
}


struct Accumulate final : Action {  // out[0] = sum of k consecutive in[0]
  int64_t k, seen = 0;
  explicit Accumulate(int64_t micro) : k(micro) {}
  void act(int64_t, const void* const* in, void* const* out) override {
    float& acc = *static_cast<float*>(out[0]);
    acc = (seen == 0 ? 0.0f : acc) + *static_cast<const float*>(in[0]);
    seen = (seen + 1) % k;
  }
};

inline plan::Plan weight_plan(int32_t k = 1, bool once = false) {
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
  if (k > 1) {
    p.regsts[2].consumers = {6, 4};
    p.regsts.push_back(regst(5, 6, {3}, 1, offset));
    p.regsts[5].acts_per_piece = k;
    p.regsts[3].pieces_per_version = k;
    p.tasks[3] = task(3, plan::TaskKind::compute, {{K::own, 3, 0}, {K::regst, 5, 0}}, {5}, {3});
    p.tasks.push_back(task(6, plan::TaskKind::compute, {{K::regst, 2, 0}}, {2}, {5}));
    p.arenas[0].bytes = offset;
    if (once) {
      p.regsts[2].consumers = {6};
      p.regsts[4].consumers = {};
      p.regsts[5].consumers = {3, 4};
      p.tasks[4] = task(4, plan::TaskKind::compute, {{K::regst, 5, 0}, {K::regst, 3, 0}}, {5, 3}, {});
      p.tasks[4].once_per_version = true;
      p.tasks[5] = task(5, plan::TaskKind::sink, {{K::regst, 1, 0}}, {1}, {});
    }
  }
  return p;
}

// Everything one run of weight_plan needs, with its TaskStates.
struct WeightRun {
  plan::Plan p;
  std::vector<uint8_t> arena;
  std::vector<float> zeros{0.0f}, y, z;
  std::unique_ptr<SourceAction> source;
  std::unique_ptr<SinkAction> sink;
  CopyInput f{1}, l{1};
  Record record{&z, 1};  // L with `once`
  One g;
  AddInPlace u;
  Accumulate a;
  std::vector<std::unique_ptr<TaskState>> tasks;

  explicit WeightRun(int64_t pieces, int32_t k = 1, bool once = false)
      : p(weight_plan(k, once)), arena(p.arenas[0].bytes, 0), y(size_t(pieces), -1), z(size_t(once ? pieces / k : pieces), -1), a(k) {
    uint8_t* arenas[] = {arena.data()};
    source = std::make_unique<SourceAction>(std::vector<SourceAction::Feed>{{reinterpret_cast<const uint8_t*>(zeros.data()), 1, 4}});
    std::vector<SinkAction::Collect> collect{{reinterpret_cast<uint8_t*>(y.data()), pieces, 4}};
    if (!once) collect.push_back({reinterpret_cast<uint8_t*>(z.data()), pieces, 4});
    sink = std::make_unique<SinkAction>(std::move(collect));
    Action* actions[] = {source.get(), &f, &g, &u, once ? static_cast<Action*>(&record) : &l, sink.get(), &a};
    for (int t = 0; t < int(p.tasks.size()); ++t) tasks.push_back(std::make_unique<TaskState>(p, t, actions[t], arenas, 2, pieces, 0));
  }
  float weight() const { return *reinterpret_cast<const float*>(arena.data() + p.regsts[3].offsets[0]); }
};

}  // namespace of::runtime::testing
