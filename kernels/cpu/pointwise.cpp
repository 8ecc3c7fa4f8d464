// SPDX-License-Identifier: Apache-2.0
// Pointwise math over same-shaped tensors (erf, sqrt, reciprocal, exp, neg, pow, clip, leaky_relu,
// hard_sigmoid, hard_swish) and the *_grad kernels, which take (dy, x) with x the forward INPUT.
// Each op is a functor holding its attributes, read once at prepare time; dx may alias dy or x.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/unary.h"

namespace of::kernels::cpu {

namespace {

// Forward ops: y = op(x).

struct ErfOp {
  float operator()(float x) const { return std::erf(x); }
};
struct SqrtOp {
  float operator()(float x) const { return std::sqrt(x); }
};
struct ReciprocalOp {
  float operator()(float x) const { return 1.0f / x; }
};
struct ExpOp {
  float operator()(float x) const { return std::exp(x); }
};
// GELU with the exact (erf) CDF, as torch.nn.GELU(): 0.5 x (1 + erf(x / sqrt 2)).
struct GeluOp {
  float operator()(float x) const { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
};
struct NegOp {
  float operator()(float x) const { return -x; }
};
struct IdentityOp {
  float operator()(float x) const { return x; }
};
struct SquareOp {
  float operator()(float x) const { return x * x; }
};
struct CubeOp {
  float operator()(float x) const { return x * x * x; }
};
struct PowOp {
  float p;
  float operator()(float x) const { return std::pow(x, p); }
};
// std::max/min in this order propagate a NaN x, as torch.clamp does.
struct ClipOp {
  float lo, hi;
  float operator()(float x) const { return std::min(std::max(x, lo), hi); }
};
struct LeakyReluOp {
  float alpha;
  float operator()(float x) const { return x > 0.0f ? x : alpha * x; }
};
// torch.nn.Hardsigmoid exports as HardSigmoid(alpha = 1/6 in float, beta = 0.5) but computes
// clamp(x + 3, 0, 6) / 6: near x = -3, alpha * x + 0.5 cancels to a value only ~1e-3 accurate
// relatively (3000 ulp at x = -2.9997), where x + 3 is exact. Those attributes get torch's form.
bool is_torch_hardsigmoid(float alpha, float beta) { return alpha == 1.0f / 6.0f && beta == 0.5f; }
struct HardSigmoidOp {
  float alpha, beta;
  bool torch_form = is_torch_hardsigmoid(alpha, beta);
  // x first in each std::min/max, so a NaN x stays NaN (torch.nn.functional.hardsigmoid).
  float operator()(float x) const {
    if (torch_form) return std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    return std::max(std::min(alpha * x + beta, 1.0f), 0.0f);
  }
};
struct HardSwishOp {
  float operator()(float x) const { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
};

// Gradient ops: dx = op(dy, x).

constexpr float two_over_sqrt_pi = 1.12837916709551257f;

struct ErfGradOp {
  float operator()(float dy, float x) const { return dy * two_over_sqrt_pi * std::exp(-x * x); }
};
// d/dx x Phi(x) = Phi(x) + x phi(x), phi the standard normal density (torch's gelu backward).
struct GeluGradOp {
  float operator()(float dy, float x) const {
    const float cdf = 0.5f * (1.0f + std::erf(x * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * std::exp(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};
// PyTorch returns zeros for exponent 0, so x == 0 gives 0 rather than 0 * inf.
struct ZeroGradOp {
  float operator()(float, float) const { return 0.0f; }
};
struct PassGradOp {
  float operator()(float dy, float) const { return dy; }
};
struct SquareGradOp {
  float operator()(float dy, float x) const { return 2.0f * x * dy; }
};
struct CubeGradOp {
  float operator()(float dy, float x) const { return 3.0f * x * x * dy; }
};
struct SqrtGradOp {
  float operator()(float dy, float x) const { return dy * 0.5f / std::sqrt(x); }
};
struct PowGradOp {
  float p;
  float operator()(float dy, float x) const { return dy * p * std::pow(x, p - 1.0f); }
};
// Strict bounds: PyTorch's hardtanh_backward (nn.ReLU6, nn.Hardtanh) passes no gradient at
// x == min or x == max.
struct ClipGradOp {
  float lo, hi;
  float operator()(float dy, float x) const { return x > lo && x < hi ? dy : 0.0f; }
};
// x == 0 takes the alpha branch, as PyTorch's leaky_relu_backward does.
struct LeakyReluGradOp {
  float alpha;
  float operator()(float dy, float x) const { return x > 0.0f ? dy : alpha * dy; }
};
struct HardSigmoidGradOp {
  float alpha, beta;
  bool torch_form = is_torch_hardsigmoid(alpha, beta);
  float operator()(float dy, float x) const {
    if (torch_form) return x > -3.0f && x < 3.0f ? dy / 6.0f : 0.0f;  // torch's hardsigmoid_backward
    const float t = alpha * x + beta;
    return t > 0.0f && t < 1.0f ? dy * alpha : 0.0f;
  }
};
// PyTorch's hardswish_backward, boundaries included: x == -3 and x == 3 take the middle branch.
struct HardSwishGradOp {
  float operator()(float dy, float x) const {
    if (x < -3.0f) return 0.0f;
    if (x <= 3.0f) return dy * (2.0f * x + 3.0f) / 6.0f;
    return dy;
  }
};

// A float attribute with a default; NaN is refused, since every comparison with it is false.
float float_attr(const KernelConfig& cfg, const char* kernel, const char* attr, float fallback) {
  const float v = cfg.attrs.get_float(attr, fallback);
  if (std::isnan(v)) fail(where_of(cfg), "{}: attribute '{}' is NaN", kernel, attr);
  return v;
}

float exponent_attr(const KernelConfig& cfg, const char* kernel) {
  const Attr* a = cfg.attrs.find("exponent");
  if (!a || a->floats.size() != 1)
    fail(where_of(cfg), "{}: attribute 'exponent' (one float) is required", kernel);
  if (!std::isfinite(a->floats[0]))
    fail(where_of(cfg), "{}: exponent {} is not finite", kernel, a->floats[0]);
  return a->floats[0];
}

ClipOp clip_bounds(const KernelConfig& cfg, const char* kernel) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  return {float_attr(cfg, kernel, "min", -inf), float_attr(cfg, kernel, "max", inf)};
}

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
  const float p = exponent_attr(cfg, "pow");
  if (p == 2.0f) return unary<SquareOp>(cfg, "pow");
  if (p == 1.0f) return unary<IdentityOp>(cfg, "pow");
  if (p == 0.5f) return unary<SqrtOp>(cfg, "pow");
  if (p == 3.0f) return unary<CubeOp>(cfg, "pow");
  return unary(cfg, "pow", PowOp{p});
}
std::unique_ptr<Kernel> make_pow_grad(const KernelConfig& cfg) {
  const float p = exponent_attr(cfg, "pow_grad");
  if (p == 2.0f) return unary_grad<SquareGradOp>(cfg, "pow_grad");
  if (p == 1.0f) return unary_grad<PassGradOp>(cfg, "pow_grad");
  if (p == 0.0f) return unary_grad<ZeroGradOp>(cfg, "pow_grad");
  if (p == 0.5f) return unary_grad<SqrtGradOp>(cfg, "pow_grad");
  if (p == 3.0f) return unary_grad<CubeGradOp>(cfg, "pow_grad");
  return unary_grad(cfg, "pow_grad", PowGradOp{p});
}

std::unique_ptr<Kernel> make_clip(const KernelConfig& cfg) {
  return unary(cfg, "clip", clip_bounds(cfg, "clip"));
}
std::unique_ptr<Kernel> make_clip_grad(const KernelConfig& cfg) {
  const ClipOp b = clip_bounds(cfg, "clip_grad");
  return unary_grad(cfg, "clip_grad", ClipGradOp{b.lo, b.hi});
}

std::unique_ptr<Kernel> make_leaky_relu(const KernelConfig& cfg) {
  return unary(cfg, "leaky_relu", LeakyReluOp{float_attr(cfg, "leaky_relu", "alpha", 0.01f)});
}
std::unique_ptr<Kernel> make_leaky_relu_grad(const KernelConfig& cfg) {
  return unary_grad(cfg, "leaky_relu_grad",
                    LeakyReluGradOp{float_attr(cfg, "leaky_relu_grad", "alpha", 0.01f)});
}

std::unique_ptr<Kernel> make_hard_sigmoid(const KernelConfig& cfg) {
  return unary(cfg, "hard_sigmoid",
               HardSigmoidOp{float_attr(cfg, "hard_sigmoid", "alpha", 0.2f),
                             float_attr(cfg, "hard_sigmoid", "beta", 0.5f)});
}
std::unique_ptr<Kernel> make_hard_sigmoid_grad(const KernelConfig& cfg) {
  return unary_grad(cfg, "hard_sigmoid_grad",
                    HardSigmoidGradOp{float_attr(cfg, "hard_sigmoid_grad", "alpha", 0.2f),
                                      float_attr(cfg, "hard_sigmoid_grad", "beta", 0.5f)});
}

std::unique_ptr<Kernel> make_hard_swish(const KernelConfig& cfg) {
  return unary<HardSwishOp>(cfg, "hard_swish");
}
std::unique_ptr<Kernel> make_hard_swish_grad(const KernelConfig& cfg) {
  return unary_grad<HardSwishGradOp>(cfg, "hard_swish_grad");
}

}  // namespace of::kernels::cpu
