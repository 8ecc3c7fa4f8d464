// SPDX-License-Identifier: Apache-2.0
// Field-by-field comparison of two plan::Plan values, for round-trip tests (plan_codec_test) and
// the plan fuzzer (decode -> encode -> decode). Returns the path of the first field that differs
// ("tasks[1].attrs[0].floats: ..."), or "" when the plans are equal. Floats compare by their bits,
// so a NaN equals the same NaN. Every field of schemas/plan_model.h is compared: a field added
// there must be added here (the sizeof checks below fail to remind whoever adds one).
#pragma once

#include <cstring>
#include <type_traits>
#include <sstream>
#include <string>
#include <vector>

#include "schemas/plan_model.h"

namespace of::test {

class PlanDiff {
 public:
  std::string first;  // "" while equal

  template <class T>
  void eq(const std::string& at, const T& a, const T& b) {
    if (first.empty() && !(a == b)) first = at + ": " + show(a) + " != " + show(b);
  }
  void eq(const std::string& at, float a, float b) {
    if (first.empty() && std::memcmp(&a, &b, sizeof a) != 0) first = at + ": " + show(a) + " != " + show(b);
  }
  void eq(const std::string& at, const std::vector<float>& a, const std::vector<float>& b) {
    eq(at + ".size()", a.size(), b.size());
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) eq(at + "[" + std::to_string(i) + "]", a[i], b[i]);
  }
  // Vectors of structs: sizes, then each element with `each`.
  template <class T, class F>
  void each(const std::string& at, const std::vector<T>& a, const std::vector<T>& b, F f) {
    eq(at + ".size()", a.size(), b.size());
    for (size_t i = 0; i < a.size() && i < b.size() && first.empty(); ++i) f(at + "[" + std::to_string(i) + "]", a[i], b[i]);
  }

 private:
  template <class T>
  static std::string show(const T& v) {
    std::ostringstream s;
    if constexpr (std::is_enum_v<T>) s << int64_t(v);
    else if constexpr (std::is_same_v<T, int8_t>) s << int(v);
    else if constexpr (requires { s << v; }) s << v;
    else if constexpr (requires { v.begin(); }) {
      s << "[";
      bool comma = false;
      for (const auto& x : v) {
        s << (comma ? "," : "") << show(x);
        comma = true;
      }
      s << "]";
    } else s << "?";
    return s.str();
  }
};

inline std::string plan_diff(const plan::Plan& a, const plan::Plan& b) {
  using namespace plan;
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8
  // Each struct's size as this comparison knows it (64-bit libstdc++): a new field changes it.
  static_assert(sizeof(Plan) == 616 && sizeof(Prediction) == 64 && sizeof(Candidate) == 80 && sizeof(Job) == 176 && sizeof(Task) == 240 && sizeof(Regst) == 120 &&
                    sizeof(Variable) == 64 && sizeof(LogicalTensor) == 120 && sizeof(Blob) == 56 && sizeof(TensorLayout) == 136 &&
                    sizeof(Boxing) == 176 && sizeof(TaskInput) == 40 && sizeof(DeviceRef) == 12 && sizeof(Arena) == 16 &&
                    sizeof(Attr) == 112 && sizeof(ShareGroup) == 56,
                "plan_model.h changed: compare the new field in test/runtime/plan/plan_diff.h, then update these sizes");
#endif
  PlanDiff d;
  auto desc = [&d](const std::string& at, const TensorDesc& x, const TensorDesc& y) {
    d.eq(at + ".shape", x.shape, y.shape);
    d.eq(at + ".dtype", x.dtype, y.dtype);
  };
  d.eq("version", a.version, b.version);
  d.eq("model", a.model, b.model);
  d.eq("job.kind", a.job.kind, b.job.kind);
  d.eq("job.batch", a.job.batch, b.job.batch);
  d.eq("job.pieces", a.job.pieces, b.job.pieces);
  d.eq("job.seed", a.job.seed, b.job.seed);
  d.eq("job.label", a.job.label, b.job.label);
  d.eq("job.micro_batches", a.job.micro_batches, b.job.micro_batches);
  d.eq("job.optimizer", a.job.optimizer, b.job.optimizer);
  d.eq("job.lr", a.job.lr, b.job.lr);
  d.eq("job.schedule", a.job.schedule, b.job.schedule);
  d.eq("job.eval_plan", a.job.eval_plan, b.job.eval_plan);
  d.each("tensors", a.tensors, b.tensors, [&](const std::string& at, const LogicalTensor& x, const LogicalTensor& y) {
    d.eq(at + ".name", x.name, y.name);
    desc(at + ".desc", x.desc, y.desc);
    d.eq(at + ".full_shape", x.full_shape, y.full_shape);
    d.eq(at + ".shard_begin", x.shard_begin, y.shard_begin);
    d.eq(at + ".model", x.model, y.model);
  });
  d.each("devices", a.devices, b.devices, [&](const std::string& at, const DeviceRef& x, const DeviceRef& y) {
    d.eq(at + ".rank", x.rank, y.rank);
    d.eq(at + ".kind", x.kind, y.kind);
    d.eq(at + ".index", x.index, y.index);
  });
  d.each("tasks", a.tasks, b.tasks, [&](const std::string& at, const Task& x, const Task& y) {
    d.eq(at + ".id", x.id, y.id);
    d.eq(at + ".kind", x.kind, y.kind);
    d.eq(at + ".name", x.name, y.name);
    d.eq(at + ".op", x.op, y.op);
    d.eq(at + ".kernel", x.kernel, y.kernel);
    d.each(at + ".attrs", x.attrs.all(), y.attrs.all(), [&](const std::string& at2, const Attr& p, const Attr& q) {
      d.eq(at2 + ".name", p.name, q.name);
      d.eq(at2 + ".ints", p.ints, q.ints);
      d.eq(at2 + ".floats", p.floats, q.floats);
      d.eq(at2 + ".str", p.str, q.str);
    });
    d.eq(at + ".device", x.device, y.device);
    d.eq(at + ".stream", x.stream, y.stream);
    d.each(at + ".inputs", x.inputs, y.inputs, [&](const std::string& at2, const TaskInput& p, const TaskInput& q) {
      d.eq(at2 + ".kind", p.kind, q.kind);
      d.eq(at2 + ".id", p.id, q.id);
      d.eq(at2 + ".blob", p.blob, q.blob);
      d.eq(at2 + ".view", p.view, q.view);
    });
    d.eq(at + ".in_regsts", x.in_regsts, y.in_regsts);
    d.eq(at + ".out_regsts", x.out_regsts, y.out_regsts);
    d.eq(at + ".io_names", x.io_names, y.io_names);
    d.eq(at + ".stage", x.stage, y.stage);
    d.eq(at + ".once_per_version", x.once_per_version, y.once_per_version);
  });
  d.each("regsts", a.regsts, b.regsts, [&](const std::string& at, const Regst& x, const Regst& y) {
    d.eq(at + ".id", x.id, y.id);
    d.eq(at + ".producer", x.producer, y.producer);
    d.eq(at + ".consumers", x.consumers, y.consumers);
    d.eq(at + ".slots", x.slots, y.slots);
    d.eq(at + ".slot_bytes", x.slot_bytes, y.slot_bytes);
    d.eq(at + ".arena", x.arena, y.arena);
    d.eq(at + ".offsets", x.offsets, y.offsets);
    d.each(at + ".blobs", x.blobs, y.blobs, [&](const std::string& at2, const Blob& p, const Blob& q) {
      d.eq(at2 + ".tensor", p.tensor, q.tensor);
      desc(at2 + ".desc", p.desc, q.desc);
      d.eq(at2 + ".offset", p.offset, q.offset);
      d.eq(at2 + ".bytes", p.bytes, q.bytes);
    });
    d.eq(at + ".persistent", x.persistent, y.persistent);
    d.eq(at + ".acts_per_piece", x.acts_per_piece, y.acts_per_piece);
    d.eq(at + ".pieces_per_version", x.pieces_per_version, y.pieces_per_version);
    d.eq(at + ".share_group", x.share_group, y.share_group);
  });
  d.each("share_groups", a.share_groups, b.share_groups, [&](const std::string& at, const ShareGroup& x, const ShareGroup& y) {
    d.eq(at + ".slots", x.slots, y.slots);
    d.eq(at + ".tasks", x.tasks, y.tasks);
    d.eq(at + ".frames", x.frames, y.frames);
  });
  d.each("variables", a.variables, b.variables, [&](const std::string& at, const Variable& x, const Variable& y) {
    d.eq(at + ".id", x.id, y.id);
    d.eq(at + ".tensor", x.tensor, y.tensor);
    d.eq(at + ".key", x.key, y.key);
    d.eq(at + ".arena", x.arena, y.arena);
    d.eq(at + ".offset", x.offset, y.offset);
    d.eq(at + ".bytes", x.bytes, y.bytes);
  });
  d.each("arenas", a.arenas, b.arenas, [&](const std::string& at, const Arena& x, const Arena& y) {
    d.eq(at + ".id", x.id, y.id);
    d.eq(at + ".device", x.device, y.device);
    d.eq(at + ".bytes", x.bytes, y.bytes);
  });
  d.each("layouts", a.layouts, b.layouts, [&](const std::string& at, const TensorLayout& x, const TensorLayout& y) {
    d.eq(at + ".name", x.name, y.name);
    desc(at + ".desc", x.desc, y.desc);
    d.eq(at + ".placement", x.placement, y.placement);
    d.eq(at + ".sbp", x.sbp, y.sbp);
    d.eq(at + ".stage", x.stage, y.stage);
  });
  d.each("boxings", a.boxings, b.boxings, [&](const std::string& at, const Boxing& x, const Boxing& y) {
    d.eq(at + ".tensor", x.tensor, y.tensor);
    d.eq(at + ".kind", x.kind, y.kind);
    d.eq(at + ".from", x.from, y.from);
    d.eq(at + ".to", x.to, y.to);
    d.eq(at + ".consumer", x.consumer, y.consumer);
    d.eq(at + ".bytes", x.bytes, y.bytes);
    d.eq(at + ".backward", x.backward, y.backward);
  });
  d.each("memory_options", a.memory_options, b.memory_options, [&](const std::string& at, const MemoryOption& x, const MemoryOption& y) {
    d.eq(at + ".flags", x.flags, y.flags);
    d.eq(at + ".peaks", x.peaks, y.peaks);
  });
  d.eq("prediction.step_seconds", a.prediction.step_seconds, b.prediction.step_seconds);
  d.eq("prediction.costs", a.prediction.costs, b.prediction.costs);
  d.each("prediction.candidates", a.prediction.candidates, b.prediction.candidates, [&](const std::string& at, const Candidate& x, const Candidate& y) {
    d.eq(at + ".flags", x.flags, y.flags);
    d.eq(at + ".step_seconds", x.step_seconds, y.step_seconds);
    d.eq(at + ".peak_bytes", x.peak_bytes, y.peak_bytes);
    d.eq(at + ".refused", x.refused, y.refused);
  });
  d.eq("buffers", a.buffers, b.buffers);
  d.eq("carried", a.carried, b.carried);
  d.eq("weights", a.weights, b.weights);
  d.eq("weights_bytes", a.weights_bytes, b.weights_bytes);
  d.eq("weights_crc32", a.weights_crc32, b.weights_crc32);
  return d.first;
}

}  // namespace of::test
