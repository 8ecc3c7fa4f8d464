// SPDX-License-Identifier: Apache-2.0
// Flatten, Reshape, Identity, Squeeze, Unsqueeze and Cast (to the same dtype; else kernel cast): a new shape over the same bytes, so all
// run the `copy` kernel and accept any dtype. Reshape's target shape and the axes of Squeeze and
// Unsqueeze (an attribute before opset 13, a constant input from 13) are known at compile time.
#include <algorithm>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_flatten(OpCtx& c) {
  c.expect_arity(1, 1);
  const TensorDesc& x = c.in(0);
  auto rank = int64_t(x.shape.size());
  int64_t axis = c.attrs().get_int("axis", 1);
  // Unlike most axes, Flatten's may equal the rank (everything goes into the first dim).
  if (axis < -rank || axis > rank) c.fail("attribute axis {} is out of range [{}, {}] for input 0 {}", axis, -rank, rank, shape_str(x.shape));
  if (axis < 0) axis += rank;
  Shape outer(x.shape.begin(), x.shape.begin() + axis), inner(x.shape.begin() + axis, x.shape.end());
  c.out(0) = TensorDesc{{numel(outer), numel(inner)}, x.dtype};
}

void infer_reshape(OpCtx& c) {
  c.expect_arity(2, 2);
  if (c.in(1).shape.size() != 1) c.fail("input 1 (shape) has shape {}, expected rank 1", shape_str(c.in(1).shape));
  const TensorDesc& x = c.in(0);
  const Shape want = c.const_ints(1);
  bool allow_zero = c.attrs().get_int("allowzero", 0) != 0;
  Shape out(want.size());
  int64_t known = 1;
  size_t infer_at = want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == -1) {
      if (infer_at != want.size()) c.fail("target shape {} has more than one -1", shape_str(want));
      infer_at = i;
      continue;
    }
    if (d == 0 && !allow_zero) {  // 0 copies the input's dim
      if (i >= x.shape.size())
        c.fail("target shape {} copies dim {} (0) but input 0 {} has rank {}", shape_str(want), i, shape_str(x.shape), x.shape.size());
      d = x.shape[i];
    } else if (d < 0) {
      c.fail("target shape {} has invalid dim {}", shape_str(want), d);
    }
    out[i] = d;
    if (__builtin_mul_overflow(known, d, &known)) c.fail("target shape {} has more than 2^63 elements", shape_str(want));
  }
  if (infer_at != want.size()) {
    if (known == 0 || numel(x.shape) % known != 0)
      c.fail("cannot reshape input 0 {} ({} elements) to {}: no size for the -1 fits", shape_str(x.shape),
             numel(x.shape), shape_str(want));
    out[infer_at] = numel(x.shape) / known;
  }
  if (numel(out) != numel(x.shape))
    c.fail("cannot reshape input 0 {} ({} elements) to {} ({} elements)", shape_str(x.shape), numel(x.shape),
           shape_str(out), numel(out));
  c.out(0) = TensorDesc{out, x.dtype};
}

std::vector<int64_t> axes_of(OpCtx& c) {
  if (c.has_in(1)) return c.const_ints(1);
  return c.attrs().get_ints("axes");
}

void infer_unsqueeze(OpCtx& c) {
  c.expect_arity(1, 2);
  std::vector<int64_t> axes = axes_of(c);
  const TensorDesc& x = c.in(0);
  const auto rank = int64_t(x.shape.size() + axes.size());
  for (int64_t& a : axes) a = c.axis(a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("axes repeat an axis");
  Shape out = x.shape;
  for (int64_t a : axes) out.insert(out.begin() + a, 1);
  c.out(0) = TensorDesc{out, x.dtype};
}

void infer_squeeze(OpCtx& c) {
  c.expect_arity(1, 2);
  const std::vector<int64_t> axes = axes_of(c);
  const TensorDesc& x = c.in(0);
  const auto rank = int64_t(x.shape.size());
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool drop = axes.empty() && x.shape[size_t(i)] == 1;
    for (int64_t a : axes) drop = drop || c.axis(a, rank) == i;
    if (drop && x.shape[size_t(i)] != 1) c.fail("cannot squeeze axis {} of input 0 {}: its size is not 1", i, shape_str(x.shape));
    if (!drop) out.push_back(x.shape[size_t(i)]);
  }
  c.out(0) = TensorDesc{out, x.dtype};
}

// Cast to the dtype a tensor already has is a copy (exporters write it around masks); between
// f32, i64 and bool it runs kernel cast (a mask to f32 for arithmetic, `mask.float()`; token ids
// to f32; a float to bool; a float to ids, `(x * 10).long()`, truncated toward zero, a NaN or
// out-of-range float giving INT64_MIN: kernels/cast_value.h).
DType cast_target(OpCtx& c) {
  const int64_t to = c.attrs().get_int("to", 0);
  const DType from = c.in(0).dtype;
  const DType want = to == 1 ? DType::f32 : to == 7 ? DType::i64 : to == 6 ? DType::i32 : to == 9 ? DType::bool_ : DType::f16;
  const bool known = to == 1 || to == 7 || to == 6 || to == 9;
  const bool converts = (from == DType::f32 || from == DType::i64 || from == DType::bool_) &&
                        (want == DType::f32 || want == DType::bool_ || want == DType::i64);
  if (!known || (want != from && !converts))
    c.fail("casts a run-time {} tensor to ONNX type {}; run-time casts go between f32, i64 and bool", dtype_name(from), to);
  return want;
}

void infer_cast(OpCtx& c) {
  c.expect_arity(1, 1);
  c.out(0) = TensorDesc{c.in(0).shape, cast_target(c)};
}

void lower_cast(OpCtx& c) {
  const DType to = cast_target(c);
  c.set_kernel(to == c.in(0).dtype && to != DType::bool_ ? "copy" : "cast");  // no copy kernel for bool: cast's bool to bool
}

// A cast to the same dtype passes the gradient on; one from bool or i64 has none to pass (its
// input is a mask or ids, as in torch); f32 to bool ends the float path.
void grad_cast(GradCtx& g) {
  if (g.wants(0) && g.desc(g.in(0)).dtype == DType::f32 && g.desc(g.out(0)).dtype == DType::f32)
    g.add_in_grad(0, g.emit("Reshape", "copy", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

void infer_identity(OpCtx& c) {
  c.expect_arity(1, 1);
  c.out(0) = c.in(0);
}

void lower_copy(OpCtx& c) { c.set_kernel("copy"); }

void lower_reshape(OpCtx& c) {
  c.set_kernel("copy");
  c.set_runtime_inputs({0});  // the shape (or axes) input is compile-time only
}

// The data is the same bytes in another shape: the gradient is dY in X's shape.
void grad_copy(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("Reshape", "copy", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

// copy (a new shape over the same bytes): a split of input axis a is a split of output axis b
// when the elements before them are the same count and one of the two dims is a multiple of the
// other (the split cuts the outer factor: [B,T,C] S(2) -> [B,T,H,D] S(2), heads; [B,T,C] S(0) ->
// [B*T,C] S(0), rows). Partial sums stay partial.
void copy_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const Shape& x = sbp::shape_of(g, n.inputs[0]);
  const Shape& y = sbp::shape_of(g, n.outputs[0]);
  int64_t before_x = 1;
  for (size_t a = 0; a < x.size(); before_x *= x[a], ++a) {
    if (x[a] <= 1) continue;
    int64_t before_y = 1;
    for (size_t b = 0; b < y.size() && before_y <= before_x; before_y *= y[b], ++b)
      if (before_y == before_x && y[b] > 1 && (x[a] % y[b] == 0 || y[b] % x[a] == 0)) {
        out.push_back(Signature{{Sbp::S(int64_t(a))}, {Sbp::S(int64_t(b))}, Signature::Tweak::none, true});
        break;
      }
  }
  out.push_back(Signature{{Sbp::P()}, {Sbp::P()}, Signature::Tweak::none, true});
}

}  // namespace

OpDef cast_def() { return {"Cast", infer_cast, lower_cast, grad_cast, {int_attr("to", 0, kMaxInt)}, {sbp_rule("cast", sbp::elementwise)}}; }
OpDef flatten_def() { return {"Flatten", infer_flatten, lower_copy, grad_copy, {int_attr("axis", -kMaxAxis, kMaxAxis)}}; }
OpDef identity_def() { return {"Identity", infer_identity, lower_copy, grad_copy}; }
// Every op here runs `copy`; Reshape lists its rule.
OpDef reshape_def() { return {"Reshape", infer_reshape, lower_reshape, grad_copy, {bool_attr("allowzero")}, {sbp_rule("copy", copy_sbp)}}; }
OpDef squeeze_def() { return {"Squeeze", infer_squeeze, lower_reshape, grad_copy, {ints_attr("axes", -kMaxAxis, kMaxAxis)}}; }
OpDef unsqueeze_def() { return {"Unsqueeze", infer_unsqueeze, lower_reshape, grad_copy, {ints_attr("axes", -kMaxAxis, kMaxAxis)}}; }

}  // namespace of::compiler
