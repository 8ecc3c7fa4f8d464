// SPDX-License-Identifier: Apache-2.0
// relu_grad, sigmoid_grad, tanh_grad: dx from (dy, y), where y is the forward OUTPUT, so they
// also serve after an activation fused into gemm/conv. dx may alias dy or y (same index only).
#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

// y > 0 exactly where x > 0, so the output decides the mask as well as the input would.
struct ReluGradOp {
  float operator()(float dy, float y) const { return y > 0.0f ? dy : 0.0f; }
};
struct SigmoidGradOp {
  float operator()(float dy, float y) const { return dy * y * (1.0f - y); }
};
struct TanhGradOp {
  float operator()(float dy, float y) const { return dy * (1.0f - y * y); }
};

template <class Op>
class UnaryGrad final : public Kernel {
 public:
  UnaryGrad(const KernelConfig& cfg, const char* name) {
    check_arity(cfg, name, 2, 2, 1);
    check_dtypes(cfg, name, DType::f32);
    check_input_shape(cfg, name, 1, "y", cfg.inputs[0].shape);
    check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
    n_ = numel(cfg.inputs[0].shape);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    const float* y = static_cast<const float*>(in[1]);
    float* dx = static_cast<float*>(out[0]);
    const Op op;
    for (int64_t i = 0; i < n_; ++i) dx[i] = op(dy[i], y[i]);
  }

 private:
  int64_t n_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_relu_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad<ReluGradOp>>(cfg, "relu_grad");
}
std::unique_ptr<Kernel> make_sigmoid_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad<SigmoidGradOp>>(cfg, "sigmoid_grad");
}
std::unique_ptr<Kernel> make_tanh_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad<TanhGradOp>>(cfg, "tanh_grad");
}

}  // namespace of::kernels::cpu
