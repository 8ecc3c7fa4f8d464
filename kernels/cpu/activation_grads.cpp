// SPDX-License-Identifier: Apache-2.0
// relu_grad, sigmoid_grad, tanh_grad: dx from (dy, y), where y is the forward OUTPUT, so they
// also serve after an activation fused into gemm/conv. dx may alias dy or y (same index only).
#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/unary.h"

namespace of::kernels::cpu {

namespace {

// y > 0 exactly where x > 0, so the output decides the mask as well as the input would.
struct ReluGradOp {
  float operator()(float dy, float y) const { return y <= 0.0f ? 0.0f : dy; }  // torch's threshold_backward: y NaN passes dy
};
struct SigmoidGradOp {
  float operator()(float dy, float y) const { return dy * y * (1.0f - y); }
};
struct TanhGradOp {
  float operator()(float dy, float y) const { return dy * (1.0f - y * y); }
};

}  // namespace

std::unique_ptr<Kernel> make_relu_grad(const KernelConfig& cfg) {
  return unary_grad<ReluGradOp>(cfg, "relu_grad", ReluGradOp{}, "y");
}
std::unique_ptr<Kernel> make_sigmoid_grad(const KernelConfig& cfg) {
  return unary_grad<SigmoidGradOp>(cfg, "sigmoid_grad", SigmoidGradOp{}, "y");
}
std::unique_ptr<Kernel> make_tanh_grad(const KernelConfig& cfg) {
  return unary_grad<TanhGradOp>(cfg, "tanh_grad", TanhGradOp{}, "y");
}

}  // namespace of::kernels::cpu
