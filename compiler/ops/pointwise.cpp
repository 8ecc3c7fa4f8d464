// SPDX-License-Identifier: Apache-2.0
// Erf, Exp, Sqrt, Reciprocal, Neg, Pow (a constant or a tensor exponent), Clip (ReLU6), LeakyRelu, HardSigmoid,
// HardSwish, Log, Abs, Sin, Cos, Softplus (and so nn.Mish), Elu, Sign, Floor, Ceil, Round: element-wise f32, output shape = input shape. Gradients either have their own
// kernel `<k>_grad(dy, x)` or are composed of existing ones (Exp, Sqrt, Reciprocal, Neg). Every
// kernel here splits like any element-wise one.
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_same(OpCtx& c) {
  c.expect_float(0);
  c.out(0) = c.in(0);
}

void infer_one(OpCtx& c) {
  c.expect_arity(1, 1);
  infer_same(c);
}

// A float scalar from a constant input (Clip's bounds, Pow's exponent).
float const_scalar(OpCtx& c, size_t i, const char* what) {
  const std::vector<uint8_t>* d = c.const_data(i);
  if (!d || numel(c.in(i).shape) != 1 || c.in(i).dtype != DType::f32)
    c.fail("input {} ({}) must be a constant f32 scalar", i, what);
  float x;
  std::memcpy(&x, d->data(), 4);
  return x;
}

template <const char* kKernel>
void lower_plain(OpCtx& c) { c.set_kernel(kKernel); }

// dX = kernel_grad(dY, X) with the forward kernel's attributes.
template <const char* kKernel>
void grad_by_kernel(GradCtx& g) {
  if (g.wants(0))
    g.add_in_grad(0, g.emit(g.node().op_type + "Grad", std::string(kKernel) + "_grad", {g.out_grad(0), g.in(0)}, g.attrs(), g.desc(g.in(0))));
}

constexpr char kErf[] = "erf", kExp[] = "exp", kGelu[] = "gelu", kSqrt[] = "sqrt", kReciprocal[] = "reciprocal", kNeg[] = "neg", kPow[] = "pow",
               kClip[] = "clip", kLeakyRelu[] = "leaky_relu", kHardSigmoid[] = "hard_sigmoid", kHardSwish[] = "hard_swish",
               kLog[] = "log", kAbs[] = "abs", kSin[] = "sin", kCos[] = "cos", kSoftplus[] = "softplus", kElu[] = "elu",
               kSign[] = "sign", kFloor[] = "floor", kCeil[] = "ceil", kRound[] = "round";

// Sign, Floor, Ceil, Round: torch's gradient is zeros (their derivative wherever it exists), not
// nothing: a weight read only through them still gets a (zero) gradient, and so weight decay and
// Adam's moments, as in torch. pow_grad with exponent 0 is the kernel that writes zeros (0 for
// any dy, where a product with 0 would make an infinite dy NaN). Behind a .detach(), as a
// straight-through estimator uses them, no gradient is asked of them at all.
void grad_zero(GradCtx& g) {
  if (!g.wants(0)) return;
  Attrs zero;
  zero.set_float("exponent", 0.0f);
  g.add_in_grad(0, g.emit(g.node().op_type + "Grad", "pow_grad", {g.out_grad(0), g.in(0)}, zero, g.desc(g.in(0))));
}

// y = exp(x): dx = dy y.
void grad_exp(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("ExpGrad", "mul", {g.out_grad(0), g.out(0)}, {}, g.desc(g.in(0))));
}

// y = sqrt(x): dx = dy / (2 y).
void grad_sqrt(GradCtx& g) {
  if (!g.wants(0)) return;
  const ValueId q = g.emit("SqrtGrad", "div", {g.out_grad(0), g.out(0)}, {}, g.desc(g.in(0)));
  g.add_in_grad(0, g.emit("SqrtGrad", "mul", {q, g.scalar(0.5f)}, {}, g.desc(g.in(0))));
}

// y = 1/x: dx = -dy y^2.
void grad_reciprocal(GradCtx& g) {
  if (!g.wants(0)) return;
  const TensorDesc d = g.desc(g.in(0));
  const ValueId t = g.emit("ReciprocalGrad", "mul", {g.out_grad(0), g.out(0)}, {}, d);
  const ValueId u = g.emit("ReciprocalGrad", "mul", {t, g.out(0)}, {}, d);
  g.add_in_grad(0, g.emit("ReciprocalGrad", "mul", {u, g.scalar(-1.0f)}, {}, d));
}

void grad_neg(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("NegGrad", "mul", {g.out_grad(0), g.scalar(-1.0f)}, {}, g.desc(g.in(0))));
}

// Pow: a constant scalar exponent is the pow kernel's attribute; any other float exponent (GeM
// pooling's learned p, x ** t of two tensors) runs the broadcasting pow_tensor kernel, with
// torch's gradients: dx = dy b x^(b-1) (0 where b == 0), db = dy y log(x) (0 where x == 0 and
// b >= 0), each summed over what it was broadcast along.
bool constant_exponent(const OpCtx& c) {
  return c.const_data(1) && !c.parameter(1) && numel(c.in(1).shape) == 1 && c.in(1).dtype == DType::f32;
}

void infer_pow(OpCtx& c) {
  c.expect_arity(2, 2);
  if (constant_exponent(c)) {
    if (c.in(1).shape.size() > c.in(0).shape.size()) c.fail("the exponent has a higher rank than the base");
    infer_same(c);
    return;
  }
  c.expect_float(0);
  if (c.in(1).dtype != DType::f32) c.fail("input 1 (exponent) has dtype {}, expected float", dtype_name(c.in(1).dtype));
  c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::f32};
}

void grad_pow(GradCtx& g) {
  if (g.node().kernel == kPow) {
    grad_by_kernel<kPow>(g);
    return;
  }
  const ValueId dy = g.out_grad(0), x = g.in(0), b = g.in(1), y = g.out(0);
  const TensorDesc out = g.desc(y), mask{out.shape, DType::bool_};
  const TensorDesc x_mask{g.desc(x).shape, DType::bool_}, b_mask{g.desc(b).shape, DType::bool_};
  if (g.wants(0)) {
    const ValueId lower = g.emit("PowGradExponent", "sub", {b, g.scalar(1.0f)}, {}, g.desc(b));
    const ValueId slope = g.emit("PowGradSlope", "mul", {g.emit("PowGradPower", "pow_tensor", {x, lower}, {}, out), b}, {}, out);
    const ValueId dx = g.emit("PowGradBase", "mul", {dy, slope}, {}, out);
    const ValueId constant = g.emit("PowGradConstant", "equal", {b, g.scalar(0.0f)}, {}, b_mask);
    g.add_in_grad(0, g.unbroadcast(g.emit("PowGradBaseZeros", "where", {constant, g.scalar(0.0f), dx}, {}, out), g.desc(x).shape));
  }
  if (g.wants(1)) {
    const ValueId log_x = g.emit("PowGradLog", "log", {x}, {}, g.desc(x));
    const ValueId db = g.emit("PowGradExp", "mul", {dy, g.emit("PowGradTimesLog", "mul", {y, log_x}, {}, out)}, {}, out);
    const ValueId zero_base = g.emit("PowGradZeroBase", "equal", {x, g.scalar(0.0f)}, {}, x_mask);
    const ValueId nonnegative = g.emit("PowGradNonnegative", "greater_or_equal", {b, g.scalar(0.0f)}, {}, b_mask);
    const ValueId flat = g.emit("PowGradFlat", "logical_and", {zero_base, nonnegative}, {}, mask);
    g.add_in_grad(1, g.unbroadcast(g.emit("PowGradExpZeros", "where", {flat, g.scalar(0.0f), db}, {}, out), g.desc(b).shape));
  }
}

void lower_pow(OpCtx& c) {
  if (!constant_exponent(c)) {
    c.set_kernel("pow_tensor");
    return;
  }
  Attrs a;
  a.set_float("exponent", const_scalar(c, 1, "exponent"));
  c.set_kernel(kPow, std::move(a));
  c.set_runtime_inputs({0});
}

// An int64 Clip's bound from a constant int64 scalar input (torch.clamp of ids).
int64_t const_int(OpCtx& c, size_t i, const char* what) {
  const std::vector<uint8_t>* d = c.const_data(i);
  if (!d || numel(c.in(i).shape) != 1 || c.in(i).dtype != DType::i64)
    c.fail("input {} ({}) must be a constant int64 scalar, as input 0 is int64", i, what);
  int64_t x;
  std::memcpy(&x, d->data(), 8);
  return x;
}

// Clip: min and max are optional inputs (absent: unbounded), of f32 (torchvision's ReLU6,
// torch.clamp) or of int64 ids (`ids.clamp(max=V - 1)`: kernel clip_int, no gradient). Constant
// bounds are the clip kernel's attributes; a float bound computed at run time (torch.clamp(x,
// min=t) of a 0-d tensor t) or a parameter (a learned bound) makes Clip a composite of Wheres,
// with torch's gradients: x's where it is inside the bounds, a bound's where x is beyond it.
bool runtime_bounds(const OpCtx& c) {
  auto runtime = [&](size_t i) { return c.has_in(i) && (!c.const_data(i) || c.parameter(i)); };
  return c.in(0).dtype == DType::f32 && (runtime(1) || runtime(2));
}

void infer_clip(OpCtx& c) {
  c.expect_arity(1, 3);
  if (c.in(0).dtype == DType::i64) {
    if (c.has_in(1)) const_int(c, 1, "min");
    if (c.has_in(2)) const_int(c, 2, "max");
    c.out(0) = c.in(0);
    return;
  }
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!c.has_in(i)) continue;
    if (c.const_data(i) && !c.parameter(i)) const_scalar(c, i, i == 1 ? "min" : "max");
    else if (c.in(i).dtype != DType::f32 || !c.in(i).shape.empty())
      c.fail("input {} ({}) has {} {}, expected an f32 scalar", i, i == 1 ? "min" : "max", dtype_name(c.in(i).dtype), shape_str(c.in(i).shape));
  }
  infer_same(c);
}

// y = x < min ? min : x, then y > max ? max : y (NaN stays NaN).
void expand_clip(ExpandCtx& c) {
  const bool upper = c.node().inputs.size() > 2 && c.input(2) != kNoValue;
  ValueId y = c.input(0);
  if (c.node().inputs.size() > 1 && c.input(1) != kNoValue)
    y = c.emit("Where", {c.emit("Less", {y, c.input(1)}), c.input(1), y}, {}, upper ? kNoValue : c.output(0));
  if (upper) c.emit("Where", {c.emit("Greater", {y, c.input(2)}), c.input(2), y}, {}, c.output(0));
}

void lower_clip(OpCtx& c) {
  if (runtime_bounds(c)) return;  // expand_clip
  Attrs a;
  if (c.in(0).dtype == DType::i64) {
    if (c.has_in(1)) a.set_int("min", const_int(c, 1, "min"));
    if (c.has_in(2)) a.set_int("max", const_int(c, 2, "max"));
    c.set_kernel("clip_int", std::move(a));
    c.set_runtime_inputs({0});
    return;
  }
  a.set_float("min", c.has_in(1) ? const_scalar(c, 1, "min") : -std::numeric_limits<float>::infinity());
  a.set_float("max", c.has_in(2) ? const_scalar(c, 2, "max") : std::numeric_limits<float>::infinity());
  c.set_kernel(kClip, std::move(a));
  c.set_runtime_inputs({0});
}

void lower_leaky_relu(OpCtx& c) {
  Attrs a;
  a.set_float("alpha", c.attrs().get_float("alpha", 0.01f));
  c.set_kernel(kLeakyRelu, std::move(a));
}

void lower_elu(OpCtx& c) {
  Attrs a;
  a.set_float("alpha", c.attrs().get_float("alpha", 1.0f));
  c.set_kernel(kElu, std::move(a));
}
void lower_hard_sigmoid(OpCtx& c) {
  Attrs a;
  a.set_float("alpha", c.attrs().get_float("alpha", 0.2f));
  a.set_float("beta", c.attrs().get_float("beta", 0.5f));
  c.set_kernel(kHardSigmoid, std::move(a));
}

}  // namespace

// The forward kernel and its `_grad`, both element-wise.
std::vector<KernelSbp> with_grad(std::string_view forward, std::string_view grad) {
  return {sbp_rule(forward, sbp::elementwise), sbp_rule(grad, sbp::elementwise)};
}

OpDef clip_def() {
  OpDef d{"Clip", infer_clip, lower_clip, grad_by_kernel<kClip>, {}, with_grad("clip", "clip_grad")};
  d.kernels.push_back(sbp_rule("clip_int", sbp::elementwise));
  d.expand = expand_clip;
  d.expands = runtime_bounds;
  return d;
}
OpDef erf_def() { return {"Erf", infer_one, lower_plain<kErf>, grad_by_kernel<kErf>, {}, with_grad("erf", "erf_grad")}; }
// Gelu (ONNX opset 20's, which fuse-gelu also makes of torch's Div/Erf/Add/Mul/Mul export):
// the exact form only; approximate = "tanh" is refused.
void infer_gelu(OpCtx& c) {
  infer_one(c);
  if (c.attrs().get_str("approximate", "none") != "none")
    c.fail("attribute approximate = '{}' is not supported (only 'none', the erf form)", c.attrs().get_str("approximate"));
}
OpDef gelu_def() { return {"Gelu", infer_gelu, lower_plain<kGelu>, grad_by_kernel<kGelu>, {}, with_grad("gelu", "gelu_grad")}; }
OpDef exp_def() { return {"Exp", infer_one, lower_plain<kExp>, grad_exp, {}, {sbp_rule("exp", sbp::elementwise)}}; }
OpDef hard_sigmoid_def() { return {"HardSigmoid", infer_one, lower_hard_sigmoid, grad_by_kernel<kHardSigmoid>, {real_attr("alpha"), real_attr("beta")},
          with_grad("hard_sigmoid", "hard_sigmoid_grad")}; }
OpDef hard_swish_def() { return {"HardSwish", infer_one, lower_plain<kHardSwish>, grad_by_kernel<kHardSwish>, {}, with_grad("hard_swish", "hard_swish_grad")}; }
OpDef leaky_relu_def() { return {"LeakyRelu", infer_one, lower_leaky_relu, grad_by_kernel<kLeakyRelu>, {real_attr("alpha")},
          with_grad("leaky_relu", "leaky_relu_grad")}; }
OpDef log_def() { return {"Log", infer_one, lower_plain<kLog>, grad_by_kernel<kLog>, {}, with_grad("log", "log_grad")}; }
OpDef abs_def() { return {"Abs", infer_one, lower_plain<kAbs>, grad_by_kernel<kAbs>, {}, with_grad("abs", "abs_grad")}; }
OpDef sign_def() { return {"Sign", infer_one, lower_plain<kSign>, grad_zero, {}, {sbp_rule("sign", sbp::elementwise)}}; }
OpDef floor_def() { return {"Floor", infer_one, lower_plain<kFloor>, grad_zero, {}, {sbp_rule("floor", sbp::elementwise)}}; }
OpDef ceil_def() { return {"Ceil", infer_one, lower_plain<kCeil>, grad_zero, {}, {sbp_rule("ceil", sbp::elementwise)}}; }
OpDef round_def() { return {"Round", infer_one, lower_plain<kRound>, grad_zero, {}, {sbp_rule("round", sbp::elementwise)}}; }
OpDef sin_def() { return {"Sin", infer_one, lower_plain<kSin>, grad_by_kernel<kSin>, {}, with_grad("sin", "sin_grad")}; }
OpDef cos_def() { return {"Cos", infer_one, lower_plain<kCos>, grad_by_kernel<kCos>, {}, with_grad("cos", "cos_grad")}; }
OpDef softplus_def() { return {"Softplus", infer_one, lower_plain<kSoftplus>, grad_by_kernel<kSoftplus>, {}, with_grad("softplus", "softplus_grad")}; }
OpDef elu_def() { return {"Elu", infer_one, lower_elu, grad_by_kernel<kElu>, {real_attr("alpha")}, with_grad("elu", "elu_grad")}; }
OpDef neg_def() { return {"Neg", infer_one, lower_plain<kNeg>, grad_neg, {}, {sbp_rule("neg", sbp::elementwise_linear)}}; }
OpDef pow_def() {
  OpDef d{"Pow", infer_pow, lower_pow, grad_pow, {}, with_grad("pow", "pow_grad")};
  d.kernels.push_back(sbp_rule("pow_tensor", sbp::elementwise));
  return d;
}
OpDef reciprocal_def() { return {"Reciprocal", infer_one, lower_plain<kReciprocal>, grad_reciprocal, {}, {sbp_rule("reciprocal", sbp::elementwise)}}; }
OpDef sqrt_def() { return {"Sqrt", infer_one, lower_plain<kSqrt>, grad_sqrt, {}, {sbp_rule("sqrt", sbp::elementwise)}}; }

}  // namespace of::compiler
