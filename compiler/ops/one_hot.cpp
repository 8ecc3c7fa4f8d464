// SPDX-License-Identifier: Apache-2.0
// OneHot: what torch exports for F.one_hot(ids, num_classes) (int64 ids, a constant depth, the
// values [0, 1] as int64; the model casts the result to float for a loss, as focal-loss code
// does). A composite: each id against the class ids along the new axis (Equal, at run time),
// then Cast to the values' dtype when they are [0, 1], or Where(hit, on, off) for float values.
// An id outside [0, depth) gives a row of `off` (torch refuses negative ids; ONNX would count
// them from the end). No gradient: the ids are data.
#include <cstring>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

int64_t depth_of(const OpCtx& c) {
  const std::vector<uint8_t>* d = c.const_data(1);
  if (!d || numel(c.in(1).shape) != 1 || (c.in(1).dtype != DType::i64 && c.in(1).dtype != DType::f32))
    c.fail("input 1 (depth) must be a constant scalar (F.one_hot with num_classes given)");
  double depth;
  if (c.in(1).dtype == DType::i64) {
    int64_t v;
    std::memcpy(&v, d->data(), 8);
    depth = double(v);
  } else {
    float v;
    std::memcpy(&v, d->data(), 4);
    depth = double(v);
  }
  if (!(depth >= 1 && depth <= 1 << 24)) c.fail("depth {} is outside [1, 2^24]", depth);
  return int64_t(depth);
}

// The values [off, on], as doubles.
std::pair<double, double> values_of(const OpCtx& c) {
  const std::vector<uint8_t>* d = c.const_data(2);
  if (!d || c.in(2).shape != Shape{2} || (c.in(2).dtype != DType::i64 && c.in(2).dtype != DType::f32))
    c.fail("input 2 (values) must be a constant [off, on] of int64 or float");
  if (c.in(2).dtype == DType::i64) {
    int64_t v[2];
    std::memcpy(v, d->data(), 16);
    if (v[0] != 0 || v[1] != 1) c.fail("int64 values [{}, {}] are not supported (only [0, 1], as F.one_hot's)", v[0], v[1]);
    return {0.0, 1.0};
  }
  float v[2];
  std::memcpy(v, d->data(), 8);
  return {double(v[0]), double(v[1])};
}

void infer_one_hot(OpCtx& c) {
  c.expect_arity(3, 3);
  if (c.in(0).dtype != DType::i64) c.fail("input 0 (indices) has dtype {}, expected int64", dtype_name(c.in(0).dtype));
  const int64_t depth = depth_of(c);
  values_of(c);
  Shape out = c.in(0).shape;
  const int64_t axis = c.axis(c.attrs().get_int("axis", -1), int64_t(out.size()) + 1);
  out.insert(out.begin() + axis, depth);
  c.out(0) = TensorDesc{out, c.in(2).dtype};
}

void lower_one_hot(OpCtx& c) {
  Attrs a;
  a.set_int("depth", depth_of(c));
  a.set_int("axis", c.axis(c.attrs().get_int("axis", -1), int64_t(c.in(0).shape.size()) + 1));
  const auto [off, on] = values_of(c);
  a.set_float("off", float(off));
  a.set_float("on", float(on));
  a.set_int("float_values", c.in(2).dtype == DType::f32 ? 1 : 0);
  c.node().kernel_attrs = std::move(a);
}

void expand_one_hot(ExpandCtx& c) {
  const Attrs& k = c.node().kernel_attrs;
  const int64_t depth = k.get_int("depth", 1), axis = k.get_int("axis", 0);
  const Shape out = c.shape(c.output(0));
  // The class ids along `axis`, 1 elsewhere: [depth, 1, ...] with a 1 per axis after it.
  std::vector<int64_t> ids(static_cast<size_t>(depth)), id_shape(out.size() - size_t(axis), 1);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i);
  id_shape[0] = depth;
  const ValueId classes = c.emit("Reshape", {c.ints(ids), c.ints(id_shape)});
  Attrs at;
  at.set_ints("axes", {axis});
  const ValueId hit = c.emit("Equal", {c.emit("Unsqueeze", {c.input(0)}, std::move(at)), classes});
  const float off = k.get_float("off", 0.0f), on = k.get_float("on", 1.0f);
  if (k.get_int("float_values", 0) == 0 || (off == 0.0f && on == 1.0f)) {
    Attrs to;
    to.set_int("to", k.get_int("float_values", 0) != 0 ? 1 : 7);  // ONNX FLOAT or INT64
    c.emit("Cast", {hit}, std::move(to), c.output(0));
    return;
  }
  c.emit("Where", {hit, c.floats({}, {on}), c.floats({}, {off})}, {}, c.output(0));
}

}  // namespace

OpDef one_hot_def() {
  OpDef d{"OneHot", infer_one_hot, lower_one_hot, nullptr, {int_attr("axis", -kMaxAxis, kMaxAxis)}};
  d.expand = expand_one_hot;
  return d;
}

}  // namespace of::compiler
