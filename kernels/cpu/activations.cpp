// SPDX-License-Identifier: Apache-2.0
// relu, sigmoid, tanh: elementwise over same-shaped input and output.
#include <cmath>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/unary.h"

namespace of::kernels::cpu {

namespace {

struct ReluOp {
  float operator()(float x) const { return !(x <= 0.0f) ? x : 0.0f; }  // NaN stays NaN, as torch.relu
};
struct TanhOp {
  float operator()(float x) const { return std::tanh(x); }
};
// exp of a non-positive argument only, so large |x| neither overflows nor yields inf/inf.
struct SigmoidOp {
  float operator()(float x) const {
    const float e = std::exp(-std::fabs(x));
    return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
  }
};

}  // namespace

std::unique_ptr<Kernel> make_relu(const KernelConfig& cfg) {
  return unary<ReluOp>(cfg, "relu");
}
std::unique_ptr<Kernel> make_sigmoid(const KernelConfig& cfg) {
  return unary<SigmoidOp>(cfg, "sigmoid");
}
std::unique_ptr<Kernel> make_tanh(const KernelConfig& cfg) {
  return unary<TanhOp>(cfg, "tanh");
}

}  // namespace of::kernels::cpu
