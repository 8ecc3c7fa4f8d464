// SPDX-License-Identifier: Apache-2.0
// IsNaN and IsInf of f32 tensors (torch.isnan, torch.isinf, torch.isfinite, and torch.nan_to_num,
// which the exporter writes as Where over both): composites of run-time comparisons. NaN is the
// one value unequal to itself, so IsNaN(x) = Not(Equal(x, x)); IsInf compares with +inf and/or
// -inf (either, for both), as detect_positive and detect_negative ask. Bool results: no
// gradient flows through them (a Where reading them passes its branch's gradient).
#include <cmath>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_is_special(OpCtx& c) {
  c.expect_arity(1, 1);
  if (c.in(0).dtype != DType::f32) c.fail("input 0 has dtype {}, expected float", dtype_name(c.in(0).dtype));
  c.out(0) = TensorDesc{c.in(0).shape, DType::bool_};
}

void expand_is_nan(ExpandCtx& c) { c.emit("Not", {c.emit("Equal", {c.input(0), c.input(0)})}, {}, c.output(0)); }

void expand_is_inf(ExpandCtx& c) {
  const bool positive = c.attrs().get_int("detect_positive", 1) != 0, negative = c.attrs().get_int("detect_negative", 1) != 0;
  const float inf = INFINITY;
  if (positive && negative) {
    c.emit("Or", {c.emit("Equal", {c.input(0), c.floats({}, {inf})}), c.emit("Equal", {c.input(0), c.floats({}, {-inf})})}, {},
           c.output(0));
  } else if (positive || negative) {
    c.emit("Equal", {c.input(0), c.floats({}, {positive ? inf : -inf})}, {}, c.output(0));
  } else {  // detects nothing: no value is below -inf, NaN included
    c.emit("Less", {c.input(0), c.floats({}, {-inf})}, {}, c.output(0));
  }
}

}  // namespace

OpDef is_inf_def() {
  OpDef d{"IsInf", infer_is_special, lower_composite, nullptr, {bool_attr("detect_negative"), bool_attr("detect_positive")}};
  d.expand = expand_is_inf;
  return d;
}

OpDef is_nan_def() {
  OpDef d{"IsNaN", infer_is_special, lower_composite, nullptr};
  d.expand = expand_is_nan;
  return d;
}

}  // namespace of::compiler
