// SPDX-License-Identifier: Apache-2.0
// Add, Sub, Mul, Div, and Max, Min of two inputs (torch.maximum, torch.minimum, torch.clamp with
// tensor bounds): element-wise with numpy multidirectional broadcasting (opset 13+). Add, Sub and
// Mul also take two int64 tensors (ids shifted or combined at run time: `ids + 4`,
// `row * width + col`), wrapping on overflow as torch does; they have no gradient. Mod: see
// infer_mod.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_binary(OpCtx& c) {
  // Max and Min take any number of inputs in ONNX; torch writes two.
  if (c.num_inputs() != 2 && (c.node().op_type == "Max" || c.node().op_type == "Min"))
    c.fail("{} of {} inputs: only two are supported (torch.maximum / torch.minimum write two)", c.node().op_type, c.num_inputs());
  c.expect_arity(2, 2);
  const std::string& op = c.node().op_type;
  if (c.in(0).dtype == DType::i64 && c.in(1).dtype == DType::i64 && (op == "Add" || op == "Sub" || op == "Mul")) {
    c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::i64};
    return;
  }
  c.expect_float(0);
  c.expect_float(1);
  c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::f32};
}

template <const char* kKernel>
void lower_binary(OpCtx& c) { c.set_kernel(kKernel); }

// Mod (torch's %, torch.remainder, torch.fmod; Swin's window arithmetic folds on constants):
// remainders of int64 ids (`ids % buckets`, the hashing trick) take the divisor's sign with
// fmod 0 (kernel mod) and the dividend's with fmod 1 (kernel fmod); floats take fmod 1 only
// (torch.fmod; torch.remainder of floats exports as a - b floor(a / b)), kernel fmod, with torch's
// gradients: da = dy, db = -dy trunc(a / b).
void infer_mod(OpCtx& c) {
  c.expect_arity(2, 2);
  if (c.in(0).dtype == DType::i64 && c.in(1).dtype == DType::i64) {
    c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::i64};
    return;
  }
  c.expect_float(0);
  c.expect_float(1);
  if (c.attrs().get_int("fmod", 0) == 0) c.fail("fmod = 0 on floats: ONNX's Mod of floats needs fmod = 1");
  c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::f32};
}

void lower_mod(OpCtx& c) { c.set_kernel(c.attrs().get_int("fmod", 0) != 0 ? "fmod" : "mod"); }

void grad_mod(GradCtx& g) {
  const ValueId dy = g.out_grad(0), a = g.in(0), b = g.in(1);
  const TensorDesc out = g.desc(dy);
  if (g.wants(0)) g.add_in_grad(0, g.unbroadcast(dy, g.desc(a).shape));
  if (!g.wants(1)) return;
  const ValueId q = g.emit("ModGradQuotient", "div", {a, b}, {}, out);
  const ValueId negative = g.emit("ModGradNegative", "less", {q, g.scalar(0.0f)}, {}, TensorDesc{out.shape, DType::bool_});
  const ValueId trunc = g.emit("ModGradTrunc", "where", {negative, g.emit("ModGradCeil", "ceil", {q}, {}, out),
                                                         g.emit("ModGradFloor", "floor", {q}, {}, out)}, {}, out);
  const ValueId db = g.emit("ModGradDivisor", "mul", {g.emit("ModGradScaled", "mul", {dy, trunc}, {}, out), g.scalar(-1.0f)}, {}, out);
  g.add_in_grad(1, g.unbroadcast(db, g.desc(b).shape));
}

constexpr char kAdd[] = "add", kSub[] = "sub", kMul[] = "mul", kDiv[] = "div", kMax[] = "max", kMin[] = "min";

// d(a op b): each side's gradient computed at the output's shape, then summed back over the axes
// that side was broadcast along.
void grad_add(GradCtx& g) {
  for (size_t i = 0; i < 2; ++i)
    if (g.wants(i)) g.add_in_grad(i, g.unbroadcast(g.out_grad(0), g.desc(g.in(i)).shape));
}

void grad_sub(GradCtx& g) {
  const ValueId dy = g.out_grad(0);
  if (g.wants(0)) g.add_in_grad(0, g.unbroadcast(dy, g.desc(g.in(0)).shape));
  if (g.wants(1)) g.add_in_grad(1, g.unbroadcast(g.emit("Neg", "mul", {dy, g.scalar(-1.0f)}, {}, g.desc(dy)), g.desc(g.in(1)).shape));
}

void grad_mul(GradCtx& g) {
  const ValueId dy = g.out_grad(0);
  for (size_t i = 0; i < 2; ++i)
    if (g.wants(i)) g.add_in_grad(i, g.unbroadcast(g.emit("Mul", "mul", {dy, g.in(1 - i)}, {}, g.desc(dy)), g.desc(g.in(i)).shape));
}

// y = a / b: da = dy / b, db = -dy * y / b.
void grad_div(GradCtx& g) {
  const ValueId dy = g.out_grad(0), b = g.in(1);
  if (g.wants(0)) g.add_in_grad(0, g.unbroadcast(g.emit("Div", "div", {dy, b}, {}, g.desc(dy)), g.desc(g.in(0)).shape));
  if (g.wants(1)) {
    ValueId y_over_b = g.emit("Div", "div", {g.out(0), b}, {}, g.desc(dy));
    ValueId t = g.emit("Mul", "mul", {dy, y_over_b}, {}, g.desc(dy));
    g.add_in_grad(1, g.unbroadcast(g.emit("Neg", "mul", {t, g.scalar(-1.0f)}, {}, g.desc(dy)), g.desc(b).shape));
  }
}

// y = max(a, b) as torch.maximum differentiates it: dy to the larger side, half to each where
// they are equal; min alike to the smaller. With s = sign(a - b) (abs_grad: dy * sign, 0 at 0):
// max: da = (dy + dy s) / 2, db = (dy - dy s) / 2; min: the other way round. Exact: dy + dy and
// dy - dy are, and so is halving.
template <bool kIsMax>
void grad_extremum(GradCtx& g) {
  const ValueId dy = g.out_grad(0);
  const TensorDesc d = g.desc(dy);  // a copy: emitting nodes may move the graph's values
  const ValueId diff = g.emit("Sub", "sub", {g.in(0), g.in(1)}, {}, d);
  const ValueId signed_dy = g.emit("Sign", "abs_grad", {dy, diff}, {}, d);
  for (size_t i = 0; i < 2; ++i) {
    if (!g.wants(i)) continue;
    const bool plus = (i == 0) == kIsMax;  // the side that takes dy where a > b
    const ValueId twice = g.emit(plus ? "Add" : "Sub", plus ? "add" : "sub", {dy, signed_dy}, {}, d);
    g.add_in_grad(i, g.unbroadcast(g.emit("Half", "mul", {twice, g.scalar(0.5f)}, {}, d), g.desc(g.in(i)).shape));
  }
}

}  // namespace

OpDef add_def() { return {"Add", infer_binary, lower_binary<kAdd>, grad_add, {}, {sbp_rule("add", sbp::elementwise_linear)}}; }
OpDef sub_def() { return {"Sub", infer_binary, lower_binary<kSub>, grad_sub, {}, {sbp_rule("sub", sbp::elementwise_linear)}}; }
OpDef mul_def() { return {"Mul", infer_binary, lower_binary<kMul>, grad_mul, {}, {sbp_rule("mul", sbp::elementwise)}}; }
OpDef div_def() { return {"Div", infer_binary, lower_binary<kDiv>, grad_div, {}, {sbp_rule("div", sbp::elementwise)}}; }
OpDef max_def() { return {"Max", infer_binary, lower_binary<kMax>, grad_extremum<true>, {}, {sbp_rule("max", sbp::elementwise)}}; }
OpDef mod_def() {
  return {"Mod", infer_mod, lower_mod, grad_mod, {bool_attr("fmod")},
          {sbp_rule("mod", sbp::elementwise), sbp_rule("fmod", sbp::elementwise)}};
}
OpDef min_def() { return {"Min", infer_binary, lower_binary<kMin>, grad_extremum<false>, {}, {sbp_rule("min", sbp::elementwise)}}; }

}  // namespace of::compiler
