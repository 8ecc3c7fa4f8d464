// SPDX-License-Identifier: Apache-2.0
// The pointwise math of one tensor (erf, sqrt, reciprocal, exp, gelu, neg, pow, clip, leaky_relu,
// hard_sigmoid, hard_swish, log, abs, sin, cos, softplus, elu, sign, floor, ceil, round) and of their gradients, which take (dy, x) with x the forward INPUT:
// one definition for the CPU kernels (cpu/pointwise.cpp) and their CUDA twins
// (cuda/pointwise_math.cu), which compile it for the device. On the host each op calls what it
// always called (std::erf, std::max, ...), so the CPU's results are unchanged; on the device the
// same expressions with CUDA's float functions, and min/max written as std::min/std::max are
// (a NaN x stays NaN, as torch.clamp), not as fminf/fmaxf (which drop a NaN).
#pragma once

#include <algorithm>
#include <cmath>

#include "kernels/host_device.h"

namespace of::kernels::pointwise {

namespace math {
#ifdef __CUDA_ARCH__
__device__ inline float erf(float x) { return erff(x); }
__device__ inline float sqrt(float x) { return sqrtf(x); }
__device__ inline float exp(float x) { return expf(x); }
__device__ inline float pow(float x, float p) { return powf(x, p); }
__device__ inline float log(float x) { return logf(x); }
__device__ inline float log1p(float x) { return log1pf(x); }
__device__ inline float expm1(float x) { return expm1f(x); }
__device__ inline float sin(float x) { return sinf(x); }
__device__ inline float cos(float x) { return cosf(x); }
__device__ inline float max(float a, float b) { return (a < b) ? b : a; }  // std::max's definition
__device__ inline float min(float a, float b) { return (b < a) ? b : a; }  // std::min's
__device__ inline float floor(float x) { return floorf(x); }
__device__ inline float ceil(float x) { return ceilf(x); }
__device__ inline float rint(float x) { return rintf(x); }  // halves to even
#else
inline float erf(float x) { return std::erf(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float exp(float x) { return std::exp(x); }
inline float pow(float x, float p) { return std::pow(x, p); }
inline float log(float x) { return std::log(x); }
inline float log1p(float x) { return std::log1p(x); }
inline float expm1(float x) { return std::expm1(x); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline float max(float a, float b) { return std::max(a, b); }
inline float min(float a, float b) { return std::min(a, b); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
inline float rint(float x) { return std::nearbyint(x); }  // halves to even (the default rounding mode)
#endif
}  // namespace math

// Forward ops: y = op(x).

struct ErfOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::erf(x); }
};
struct SqrtOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::sqrt(x); }
};
struct ReciprocalOp {
  OF_HOST_DEVICE float operator()(float x) const { return 1.0f / x; }
};
struct ExpOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::exp(x); }
};
// GELU with the exact (erf) CDF, as torch.nn.GELU(): 0.5 x (1 + erf(x / sqrt 2)).
struct GeluOp {
  OF_HOST_DEVICE float operator()(float x) const { return 0.5f * x * (1.0f + math::erf(x * 0.70710678118654752f)); }
};
struct NegOp {
  OF_HOST_DEVICE float operator()(float x) const { return -x; }
};
struct IdentityOp {
  OF_HOST_DEVICE float operator()(float x) const { return x; }
};
struct SquareOp {
  OF_HOST_DEVICE float operator()(float x) const { return x * x; }
};
struct CubeOp {
  OF_HOST_DEVICE float operator()(float x) const { return x * x * x; }
};
struct PowOp {
  float p;
  OF_HOST_DEVICE float operator()(float x) const { return math::pow(x, p); }
};
// std::max/min in this order propagate a NaN x, as torch.clamp does.
struct ClipOp {
  float lo, hi;
  OF_HOST_DEVICE float operator()(float x) const { return math::min(math::max(x, lo), hi); }
};
struct LeakyReluOp {
  float alpha;
  OF_HOST_DEVICE float operator()(float x) const { return x > 0.0f ? x : alpha * x; }
};
// torch.nn.Hardsigmoid exports as HardSigmoid(alpha = 1/6 in float, beta = 0.5) but computes
// clamp(x + 3, 0, 6) / 6: near x = -3, alpha * x + 0.5 cancels to a value only ~1e-3 accurate
// relatively (3000 ulp at x = -2.9997), where x + 3 is exact. Those attributes get torch's form.
OF_HOST_DEVICE inline bool is_torch_hardsigmoid(float alpha, float beta) { return alpha == 1.0f / 6.0f && beta == 0.5f; }
struct HardSigmoidOp {
  float alpha, beta;
  bool torch_form = is_torch_hardsigmoid(alpha, beta);
  // x first in each std::min/max, so a NaN x stays NaN (torch.nn.functional.hardsigmoid).
  OF_HOST_DEVICE float operator()(float x) const {
    if (torch_form) return math::min(math::max(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    return math::max(math::min(alpha * x + beta, 1.0f), 0.0f);
  }
};
struct HardSwishOp {
  OF_HOST_DEVICE float operator()(float x) const { return x * math::min(math::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
};

struct LogOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::log(x); }
};
struct AbsOp {
  OF_HOST_DEVICE float operator()(float x) const { return x < 0.0f ? -x : (x == 0.0f ? 0.0f : x); }  // |-0| = +0, NaN stays
};
struct SinOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::sin(x); }
};
// torch.sign: (0 < x) - (x < 0), so 0 for +-0 and for NaN, as torch's kernel gives.
struct SignOp {
  OF_HOST_DEVICE float operator()(float x) const { return float(0.0f < x) - float(x < 0.0f); }
};
struct FloorOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::floor(x); }
};
struct CeilOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::ceil(x); }
};
// torch.round and ONNX Round: to the nearest integer, halves to even (2.5 -> 2, -0.5 -> -0).
struct RoundOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::rint(x); }
};
struct CosOp {
  OF_HOST_DEVICE float operator()(float x) const { return math::cos(x); }
};
// ONNX Softplus is log(exp(x) + 1); torch.nn.Softplus (beta 1, threshold 20, which is what torch
// exports as it) returns x itself above the threshold, and log1p(exp(x)) below.
struct SoftplusOp {
  OF_HOST_DEVICE float operator()(float x) const { return x > 20.0f ? x : math::log1p(math::exp(x)); }
};
// torch.nn.ELU: x above 0, alpha (exp(x) - 1) at and below it.
struct EluOp {
  float alpha;
  OF_HOST_DEVICE float operator()(float x) const { return x > 0.0f ? x : alpha * math::expm1(x); }
};

// Gradient ops: dx = op(dy, x).

constexpr float two_over_sqrt_pi = 1.12837916709551257f;

struct ErfGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return dy * two_over_sqrt_pi * math::exp(-x * x); }
};
// d/dx x Phi(x) = Phi(x) + x phi(x), phi the standard normal density (torch's gelu backward).
struct GeluGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const {
    const float cdf = 0.5f * (1.0f + math::erf(x * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * math::exp(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};
// PyTorch returns zeros for exponent 0, so x == 0 gives 0 rather than 0 * inf.
struct ZeroGradOp {
  OF_HOST_DEVICE float operator()(float, float) const { return 0.0f; }
};
struct PassGradOp {
  OF_HOST_DEVICE float operator()(float dy, float) const { return dy; }
};
struct SquareGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return 2.0f * x * dy; }
};
struct CubeGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return 3.0f * x * x * dy; }
};
struct SqrtGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return dy * 0.5f / math::sqrt(x); }
};
struct PowGradOp {
  float p;
  OF_HOST_DEVICE float operator()(float dy, float x) const { return dy * p * math::pow(x, p - 1.0f); }
};
// Strict bounds: PyTorch's hardtanh_backward (nn.ReLU6, nn.Hardtanh) passes no gradient at
// x == min or x == max.
struct ClipGradOp {
  float lo, hi;
  OF_HOST_DEVICE float operator()(float dy, float x) const { return x > lo && x < hi ? dy : 0.0f; }
};
// x == 0 takes the alpha branch, as PyTorch's leaky_relu_backward does.
struct LeakyReluGradOp {
  float alpha;
  OF_HOST_DEVICE float operator()(float dy, float x) const { return x > 0.0f ? dy : alpha * dy; }
};
struct HardSigmoidGradOp {
  float alpha, beta;
  bool torch_form = is_torch_hardsigmoid(alpha, beta);
  OF_HOST_DEVICE float operator()(float dy, float x) const {
    if (torch_form) return x > -3.0f && x < 3.0f ? dy / 6.0f : 0.0f;  // torch's hardsigmoid_backward
    const float t = alpha * x + beta;
    return t > 0.0f && t < 1.0f ? dy * alpha : 0.0f;
  }
};
// PyTorch's hardswish_backward, boundaries included: x == -3 and x == 3 take the middle branch.
struct HardSwishGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const {
    if (x < -3.0f) return 0.0f;
    if (x <= 3.0f) return dy * (2.0f * x + 3.0f) / 6.0f;
    return dy;
  }
};

struct LogGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return dy / x; }
};
// torch's abs backward: dy times sign(x), 0 at x == 0.
struct AbsGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f * dy); }
};
struct SinGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return dy * math::cos(x); }
};
struct CosGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const { return -dy * math::sin(x); }
};
// torch's softplus_backward: dy above the threshold, dy z / (z + 1) with z = exp(x) below it.
struct SoftplusGradOp {
  OF_HOST_DEVICE float operator()(float dy, float x) const {
    if (x > 20.0f) return dy;
    const float z = math::exp(x);
    return dy * z / (z + 1.0f);
  }
};
// torch's elu_backward (from the input): dy above 0, dy alpha exp(x) at and below it.
struct EluGradOp {
  float alpha;
  OF_HOST_DEVICE float operator()(float dy, float x) const { return x > 0.0f ? dy : dy * alpha * math::exp(x); }
};

// pow and its gradient by exponent: the common ones get exact loops (x*x rather than powf(x, 2)),
// as PyTorch's pow does. `make` is called with the op.
template <class Make>
auto with_pow_op(float p, Make&& make) {
  if (p == 2.0f) return make(SquareOp{});
  if (p == 1.0f) return make(IdentityOp{});
  if (p == 0.5f) return make(SqrtOp{});
  if (p == 3.0f) return make(CubeOp{});
  return make(PowOp{p});
}
template <class Make>
auto with_pow_grad_op(float p, Make&& make) {
  if (p == 2.0f) return make(SquareGradOp{});
  if (p == 1.0f) return make(PassGradOp{});
  if (p == 0.0f) return make(ZeroGradOp{});
  if (p == 0.5f) return make(SqrtGradOp{});
  if (p == 3.0f) return make(CubeGradOp{});
  return make(PowGradOp{p});
}

}  // namespace of::kernels::pointwise
