// SPDX-License-Identifier: Apache-2.0
// relu, sigmoid, tanh: elementwise over same-shaped input and output.
#include <cmath>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

struct ReluOp {
  float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
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

template <class Op>
class Unary final : public Kernel {
 public:
  Unary(const KernelConfig& cfg, const char* name) {
    check_arity(cfg, name, 1, 1, 1);
    check_dtypes(cfg, name, DType::f32);
    check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
    n_ = numel(cfg.inputs[0].shape);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const Op op;
    for (int64_t i = 0; i < n_; ++i) y[i] = op(x[i]);
  }

 private:
  int64_t n_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_relu(const KernelConfig& cfg) {
  return std::make_unique<Unary<ReluOp>>(cfg, "relu");
}
std::unique_ptr<Kernel> make_sigmoid(const KernelConfig& cfg) {
  return std::make_unique<Unary<SigmoidOp>>(cfg, "sigmoid");
}
std::unique_ptr<Kernel> make_tanh(const KernelConfig& cfg) {
  return std::make_unique<Unary<TanhOp>>(cfg, "tanh");
}

}  // namespace of::kernels::cpu
