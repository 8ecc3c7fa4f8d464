// SPDX-License-Identifier: Apache-2.0
// A source -> k stages -> sink plan over one float per slot, for runtime protocol tests.
#pragma once

#include <stdexcept>
#include <string>

#include "runtime/actors/protocol.h"
#include "schemas/plan_model.h"

namespace of::runtime::testing {

// x -> x + 1, on one float.
struct AddOne final : Action {
  void act(int64_t, const void* const* in, void* const* out) override {
    *static_cast<float*>(out[0]) = *static_cast<const float*>(in[0]) + 1.0f;
  }
};

// Copies its input, and throws at piece `piece`.
struct FailsAt final : Action {
  int64_t piece;
  explicit FailsAt(int64_t p) : piece(p) {}
  void act(int64_t p, const void* const* in, void* const* out) override {
    if (p == piece) throw std::runtime_error("boom at piece " + std::to_string(p));
    *static_cast<float*>(out[0]) = *static_cast<const float*>(in[0]);
  }
};

// source -> `stages` AddOne tasks -> sink, every register `slots` deep, one float per slot.
inline plan::Plan chain(int stages, int32_t slots) {
  plan::Plan p;
  p.devices = {plan::DeviceRef{}};
  uint64_t offset = 0;
  for (int r = 0; r <= stages; ++r) {
    plan::Regst regst{.id = r, .producer = r, .consumers = {r + 1}, .slots = slots, .slot_bytes = 64};
    for (int s = 0; s < slots; ++s, offset += 64) regst.offsets.push_back(offset);
    regst.blobs = {plan::Blob{0, {{1}, DType::f32}, 0, 4}};
    p.regsts.push_back(regst);
  }
  p.arenas = {plan::Arena{0, 0, offset}};
  for (int t = 0; t <= stages + 1; ++t) {
    plan::Task task{.id = t, .kind = t == 0 ? plan::TaskKind::source : t == stages + 1 ? plan::TaskKind::sink : plan::TaskKind::compute};
    task.name = "t" + std::to_string(t);
    task.op = t == 0 ? "Source" : t == stages + 1 ? "Sink" : "AddOne";
    if (t > 0) {
      task.inputs = {plan::TaskInput{plan::InputKind::regst, t - 1, 0}};
      task.in_regsts = {t - 1};
    }
    if (t <= stages) task.out_regsts = {t};
    p.tasks.push_back(task);
  }
  return p;
}

}  // namespace of::runtime::testing
