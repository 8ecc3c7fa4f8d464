// SPDX-License-Identifier: Apache-2.0
// Pointwise math over same-shaped tensors (erf, sqrt, reciprocal, exp, neg, pow, clip, leaky_relu,
// hard_sigmoid, hard_swish, log, abs, sin, cos, softplus, elu, sign, floor, ceil, round) and the *_grad kernels, which take (dy, x) with x the forward INPUT.
// Each op is a functor holding its attributes, read once at prepare time; dx may alias dy or x.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/unary.h"
#include "kernels/pointwise_ops.h"

namespace of::kernels::cpu {

namespace {

using namespace pointwise;  // the ops (kernels/pointwise_ops.h)

}  // namespace

std::unique_ptr<Kernel> make_erf(const KernelConfig& cfg) { return unary<ErfOp>(cfg, "erf"); }
std::unique_ptr<Kernel> make_erf_grad(const KernelConfig& cfg) {
  return unary_grad<ErfGradOp>(cfg, "erf_grad");
}
std::unique_ptr<Kernel> make_sqrt(const KernelConfig& cfg) { return unary<SqrtOp>(cfg, "sqrt"); }
std::unique_ptr<Kernel> make_reciprocal(const KernelConfig& cfg) {
  return unary<ReciprocalOp>(cfg, "reciprocal");
}
std::unique_ptr<Kernel> make_exp(const KernelConfig& cfg) { return unary<ExpOp>(cfg, "exp"); }
// The loops check the configuration; oneDNN's primitives then run it (eltwise_dnnl.cpp).
std::unique_ptr<Kernel> make_gelu(const KernelConfig& cfg) {
  auto checked = unary<GeluOp>(cfg, "gelu");
  if (auto dnnl = make_dnnl_gelu(cfg)) return dnnl;
  return checked;
}
std::unique_ptr<Kernel> make_gelu_grad(const KernelConfig& cfg) {
  auto checked = unary_grad<GeluGradOp>(cfg, "gelu_grad");
  if (auto dnnl = make_dnnl_gelu_grad(cfg)) return dnnl;
  return checked;
}
std::unique_ptr<Kernel> make_neg(const KernelConfig& cfg) { return unary<NegOp>(cfg, "neg"); }

// The common exponents get exact loops (x*x rather than powf(x, 2)), as PyTorch's pow does.
std::unique_ptr<Kernel> make_pow(const KernelConfig& cfg) {
  return with_pow_op(pow_exponent(cfg, "pow"), [&](auto op) -> std::unique_ptr<Kernel> { return unary(cfg, "pow", op); });
}
std::unique_ptr<Kernel> make_pow_grad(const KernelConfig& cfg) {
  return with_pow_grad_op(pow_exponent(cfg, "pow_grad"), [&](auto op) -> std::unique_ptr<Kernel> { return unary_grad(cfg, "pow_grad", op); });
}

std::unique_ptr<Kernel> make_clip(const KernelConfig& cfg) {
  const auto [lo, hi] = clip_bounds(cfg, "clip");
  return unary(cfg, "clip", ClipOp{lo, hi});
}
std::unique_ptr<Kernel> make_clip_grad(const KernelConfig& cfg) {
  const auto [lo, hi] = clip_bounds(cfg, "clip_grad");
  return unary_grad(cfg, "clip_grad", ClipGradOp{lo, hi});
}

std::unique_ptr<Kernel> make_leaky_relu(const KernelConfig& cfg) {
  return unary(cfg, "leaky_relu", LeakyReluOp{pointwise_float_attr(cfg, "leaky_relu", "alpha", 0.01f)});
}
std::unique_ptr<Kernel> make_leaky_relu_grad(const KernelConfig& cfg) {
  return unary_grad(cfg, "leaky_relu_grad",
                    LeakyReluGradOp{pointwise_float_attr(cfg, "leaky_relu_grad", "alpha", 0.01f)});
}

std::unique_ptr<Kernel> make_hard_sigmoid(const KernelConfig& cfg) {
  return unary(cfg, "hard_sigmoid",
               HardSigmoidOp{pointwise_float_attr(cfg, "hard_sigmoid", "alpha", 0.2f),
                             pointwise_float_attr(cfg, "hard_sigmoid", "beta", 0.5f)});
}
std::unique_ptr<Kernel> make_hard_sigmoid_grad(const KernelConfig& cfg) {
  return unary_grad(cfg, "hard_sigmoid_grad",
                    HardSigmoidGradOp{pointwise_float_attr(cfg, "hard_sigmoid_grad", "alpha", 0.2f),
                                      pointwise_float_attr(cfg, "hard_sigmoid_grad", "beta", 0.5f)});
}

std::unique_ptr<Kernel> make_hard_swish(const KernelConfig& cfg) {
  return unary<HardSwishOp>(cfg, "hard_swish");
}
std::unique_ptr<Kernel> make_hard_swish_grad(const KernelConfig& cfg) {
  return unary_grad<HardSwishGradOp>(cfg, "hard_swish_grad");
}

std::unique_ptr<Kernel> make_log(const KernelConfig& cfg) { return unary<LogOp>(cfg, "log"); }
std::unique_ptr<Kernel> make_log_grad(const KernelConfig& cfg) { return unary_grad<LogGradOp>(cfg, "log_grad"); }
std::unique_ptr<Kernel> make_abs(const KernelConfig& cfg) { return unary<AbsOp>(cfg, "abs"); }
std::unique_ptr<Kernel> make_abs_grad(const KernelConfig& cfg) { return unary_grad<AbsGradOp>(cfg, "abs_grad"); }
std::unique_ptr<Kernel> make_sign(const KernelConfig& cfg) { return unary<SignOp>(cfg, "sign"); }
std::unique_ptr<Kernel> make_floor(const KernelConfig& cfg) { return unary<FloorOp>(cfg, "floor"); }
std::unique_ptr<Kernel> make_ceil(const KernelConfig& cfg) { return unary<CeilOp>(cfg, "ceil"); }
std::unique_ptr<Kernel> make_round(const KernelConfig& cfg) { return unary<RoundOp>(cfg, "round"); }
std::unique_ptr<Kernel> make_sin(const KernelConfig& cfg) { return unary<SinOp>(cfg, "sin"); }
std::unique_ptr<Kernel> make_sin_grad(const KernelConfig& cfg) { return unary_grad<SinGradOp>(cfg, "sin_grad"); }
std::unique_ptr<Kernel> make_cos(const KernelConfig& cfg) { return unary<CosOp>(cfg, "cos"); }
std::unique_ptr<Kernel> make_cos_grad(const KernelConfig& cfg) { return unary_grad<CosGradOp>(cfg, "cos_grad"); }
std::unique_ptr<Kernel> make_softplus(const KernelConfig& cfg) { return unary<SoftplusOp>(cfg, "softplus"); }
std::unique_ptr<Kernel> make_softplus_grad(const KernelConfig& cfg) { return unary_grad<SoftplusGradOp>(cfg, "softplus_grad"); }
std::unique_ptr<Kernel> make_elu(const KernelConfig& cfg) {
  return unary(cfg, "elu", EluOp{pointwise_float_attr(cfg, "elu", "alpha", 1.0f)});
}
std::unique_ptr<Kernel> make_elu_grad(const KernelConfig& cfg) {
  return unary_grad(cfg, "elu_grad", EluGradOp{pointwise_float_attr(cfg, "elu_grad", "alpha", 1.0f)});
}

}  // namespace of::kernels::cpu
