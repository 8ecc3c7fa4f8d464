// SPDX-License-Identifier: Apache-2.0
// Greater, GreaterOrEqual, Less, LessOrEqual, Equal (f32 or i64 operands), And, Or, Not (bool):
// masks made from run-time data (torch.where(x > 0, ...), x.masked_fill(x < 0, 0), ids == pad),
// bool results with numpy broadcasting. On shapes and constants infer-shapes folds them first
// (const_eval.cpp). No gradient flows through a comparison: its output is bool (and where a
// mask is cast to f32, Cast gives its input none).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_compare(OpCtx& c) {
  c.expect_arity(2, 2);
  const DType t = c.in(0).dtype;
  if ((t != DType::f32 && t != DType::i64) || c.in(1).dtype != t)
    c.fail("compares {} with {}: run-time comparisons take two f32 or two i64 tensors", dtype_name(t), dtype_name(c.in(1).dtype));
  c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::bool_};
}

void infer_logical(OpCtx& c) {
  c.expect_arity(2, 2);
  if (c.in(0).dtype != DType::bool_ || c.in(1).dtype != DType::bool_)
    c.fail("takes bool tensors, not {} and {}", dtype_name(c.in(0).dtype), dtype_name(c.in(1).dtype));
  c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::bool_};
}

void infer_not(OpCtx& c) {
  c.expect_arity(1, 1);
  if (c.in(0).dtype != DType::bool_) c.fail("takes a bool tensor, not {}", dtype_name(c.in(0).dtype));
  c.out(0) = c.in(0);
}

template <const char* kKernel>
void lower_to(OpCtx& c) { c.set_kernel(kKernel); }

constexpr char kGreater[] = "greater", kGreaterOrEqual[] = "greater_or_equal", kLess[] = "less", kLessOrEqual[] = "less_or_equal",
               kEqual[] = "equal", kAnd[] = "logical_and", kOr[] = "logical_or", kNot[] = "logical_not";

}  // namespace

OpDef and_def() { return {"And", infer_logical, lower_to<kAnd>, nullptr, {}, {sbp_rule(kAnd, sbp::elementwise)}}; }
OpDef equal_def() { return {"Equal", infer_compare, lower_to<kEqual>, nullptr, {}, {sbp_rule(kEqual, sbp::elementwise)}}; }
OpDef greater_def() { return {"Greater", infer_compare, lower_to<kGreater>, nullptr, {}, {sbp_rule(kGreater, sbp::elementwise)}}; }
OpDef greater_or_equal_def() {
  return {"GreaterOrEqual", infer_compare, lower_to<kGreaterOrEqual>, nullptr, {}, {sbp_rule(kGreaterOrEqual, sbp::elementwise)}};
}
OpDef less_def() { return {"Less", infer_compare, lower_to<kLess>, nullptr, {}, {sbp_rule(kLess, sbp::elementwise)}}; }
OpDef less_or_equal_def() {
  return {"LessOrEqual", infer_compare, lower_to<kLessOrEqual>, nullptr, {}, {sbp_rule(kLessOrEqual, sbp::elementwise)}};
}
OpDef not_def() { return {"Not", infer_not, lower_to<kNot>, nullptr, {}, {sbp_rule(kNot, sbp::elementwise)}}; }
OpDef or_def() { return {"Or", infer_logical, lower_to<kOr>, nullptr, {}, {sbp_rule(kOr, sbp::elementwise)}}; }

}  // namespace of::compiler
