// SPDX-License-Identifier: Apache-2.0
// The pointwise ops (erf, sqrt, reciprocal, exp, neg, pow, clip, leaky_relu, hard_sigmoid,
// hard_swish) and their gradients on the GPU, host side: configs checked and attributes read by
// the CPU twins' rules (kernels/rules.h), the math the CPU twins' own (kernels/pointwise_ops.h).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

using namespace pointwise;

template <class Op>
class Map final : public Kernel {
 public:
  Map(const KernelConfig& cfg, const char* name, Op op) : op_(op), n_(unary_count(cfg, name)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_map(op_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), n_, ctx.stream->stream);
    ctx.stream->check_launch("pointwise");
  }

 private:
  Op op_;
  int64_t n_ = 0;
};

template <class Op>
class MapGrad final : public Kernel {
 public:
  MapGrad(const KernelConfig& cfg, const char* name, Op op) : op_(op), n_(unary_grad_count(cfg, name, "x")) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_map_grad(op_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<float*>(out[0]), n_,
                    ctx.stream->stream);
    ctx.stream->check_launch("pointwise_grad");
  }

 private:
  Op op_;
  int64_t n_ = 0;
};

template <class Op>
std::unique_ptr<Kernel> map(const KernelConfig& cfg, const char* name, Op op = Op{}) {
  return std::make_unique<Map<Op>>(cfg, name, op);
}
template <class Op>
std::unique_ptr<Kernel> map_grad(const KernelConfig& cfg, const char* name, Op op = Op{}) {
  return std::make_unique<MapGrad<Op>>(cfg, name, op);
}

}  // namespace

std::unique_ptr<Kernel> make_erf(const KernelConfig& cfg) { return map<ErfOp>(cfg, "erf"); }
std::unique_ptr<Kernel> make_erf_grad(const KernelConfig& cfg) { return map_grad<ErfGradOp>(cfg, "erf_grad"); }
std::unique_ptr<Kernel> make_sqrt(const KernelConfig& cfg) { return map<SqrtOp>(cfg, "sqrt"); }
std::unique_ptr<Kernel> make_reciprocal(const KernelConfig& cfg) { return map<ReciprocalOp>(cfg, "reciprocal"); }
std::unique_ptr<Kernel> make_exp(const KernelConfig& cfg) { return map<ExpOp>(cfg, "exp"); }
std::unique_ptr<Kernel> make_neg(const KernelConfig& cfg) { return map<NegOp>(cfg, "neg"); }
std::unique_ptr<Kernel> make_pow(const KernelConfig& cfg) {
  return with_pow_op(pow_exponent(cfg, "pow"), [&](auto op) -> std::unique_ptr<Kernel> { return map(cfg, "pow", op); });
}
std::unique_ptr<Kernel> make_pow_grad(const KernelConfig& cfg) {
  return with_pow_grad_op(pow_exponent(cfg, "pow_grad"), [&](auto op) -> std::unique_ptr<Kernel> { return map_grad(cfg, "pow_grad", op); });
}
std::unique_ptr<Kernel> make_clip(const KernelConfig& cfg) {
  const auto [lo, hi] = clip_bounds(cfg, "clip");
  return map(cfg, "clip", ClipOp{lo, hi});
}
std::unique_ptr<Kernel> make_clip_grad(const KernelConfig& cfg) {
  const auto [lo, hi] = clip_bounds(cfg, "clip_grad");
  return map_grad(cfg, "clip_grad", ClipGradOp{lo, hi});
}
std::unique_ptr<Kernel> make_leaky_relu(const KernelConfig& cfg) {
  return map(cfg, "leaky_relu", LeakyReluOp{pointwise_float_attr(cfg, "leaky_relu", "alpha", 0.01f)});
}
std::unique_ptr<Kernel> make_leaky_relu_grad(const KernelConfig& cfg) {
  return map_grad(cfg, "leaky_relu_grad", LeakyReluGradOp{pointwise_float_attr(cfg, "leaky_relu_grad", "alpha", 0.01f)});
}
std::unique_ptr<Kernel> make_hard_sigmoid(const KernelConfig& cfg) {
  return map(cfg, "hard_sigmoid",
             HardSigmoidOp{pointwise_float_attr(cfg, "hard_sigmoid", "alpha", 0.2f), pointwise_float_attr(cfg, "hard_sigmoid", "beta", 0.5f)});
}
std::unique_ptr<Kernel> make_hard_sigmoid_grad(const KernelConfig& cfg) {
  return map_grad(cfg, "hard_sigmoid_grad",
                  HardSigmoidGradOp{pointwise_float_attr(cfg, "hard_sigmoid_grad", "alpha", 0.2f),
                                    pointwise_float_attr(cfg, "hard_sigmoid_grad", "beta", 0.5f)});
}
std::unique_ptr<Kernel> make_hard_swish(const KernelConfig& cfg) { return map<HardSwishOp>(cfg, "hard_swish"); }
std::unique_ptr<Kernel> make_hard_swish_grad(const KernelConfig& cfg) { return map_grad<HardSwishGradOp>(cfg, "hard_swish_grad"); }

std::unique_ptr<Kernel> make_log(const KernelConfig& cfg) { return map<LogOp>(cfg, "log"); }
std::unique_ptr<Kernel> make_log_grad(const KernelConfig& cfg) { return map_grad<LogGradOp>(cfg, "log_grad"); }
std::unique_ptr<Kernel> make_abs(const KernelConfig& cfg) { return map<AbsOp>(cfg, "abs"); }
std::unique_ptr<Kernel> make_sign(const KernelConfig& cfg) { return map<SignOp>(cfg, "sign"); }
std::unique_ptr<Kernel> make_floor(const KernelConfig& cfg) { return map<FloorOp>(cfg, "floor"); }
std::unique_ptr<Kernel> make_ceil(const KernelConfig& cfg) { return map<CeilOp>(cfg, "ceil"); }
std::unique_ptr<Kernel> make_round(const KernelConfig& cfg) { return map<RoundOp>(cfg, "round"); }
std::unique_ptr<Kernel> make_abs_grad(const KernelConfig& cfg) { return map_grad<AbsGradOp>(cfg, "abs_grad"); }
std::unique_ptr<Kernel> make_sin(const KernelConfig& cfg) { return map<SinOp>(cfg, "sin"); }
std::unique_ptr<Kernel> make_sin_grad(const KernelConfig& cfg) { return map_grad<SinGradOp>(cfg, "sin_grad"); }
std::unique_ptr<Kernel> make_cos(const KernelConfig& cfg) { return map<CosOp>(cfg, "cos"); }
std::unique_ptr<Kernel> make_cos_grad(const KernelConfig& cfg) { return map_grad<CosGradOp>(cfg, "cos_grad"); }
std::unique_ptr<Kernel> make_softplus(const KernelConfig& cfg) { return map<SoftplusOp>(cfg, "softplus"); }
std::unique_ptr<Kernel> make_softplus_grad(const KernelConfig& cfg) { return map_grad<SoftplusGradOp>(cfg, "softplus_grad"); }
std::unique_ptr<Kernel> make_elu(const KernelConfig& cfg) { return map(cfg, "elu", EluOp{pointwise_float_attr(cfg, "elu", "alpha", 1.0f)}); }
std::unique_ptr<Kernel> make_elu_grad(const KernelConfig& cfg) {
  return map_grad(cfg, "elu_grad", EluGradOp{pointwise_float_attr(cfg, "elu_grad", "alpha", 1.0f)});
}

}  // namespace of::kernels::cuda
