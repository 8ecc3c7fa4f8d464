// SPDX-License-Identifier: Apache-2.0
// softmax_cross_entropy and its gradient, host side on the GPU: the CPU twin's checks and its
// `scale` rule (a device holding 1/k of a split batch divides by N*k rows), sums and class
// weights (kernels/rules.h); the per-row losses
// live in a scratch buffer of the kernel's own, allocated when it is prepared.
#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

// The attributes' rule (kernels/rules.h), checked as the CPU twin checks them; the weights'
// address is the act's.
XentRule xent_rule(const KernelConfig& cfg, const char* name, size_t weights_at, int64_t classes) {
  XentRule r;
  r.scale = loss_scale(cfg);
  r.smoothing = label_smoothing(cfg, name);
  r.ignore = ignore_index(cfg);
  r.sum = loss_sums(cfg);
  class_weights(cfg, name, weights_at, classes, r.smoothing);
  return r;
}

class SoftmaxCrossEntropy final : public Kernel {
 public:
  SoftmaxCrossEntropy(const KernelConfig& cfg) {
    const char* name = "softmax_cross_entropy";
    cpu::check_arity(cfg, name, 2, 3, 2);
    cpu::check_dtypes(cfg, name, xent_input_dtypes(cfg, {DType::f32, DType::i64}), {DType::f32, DType::f32});
    std::tie(n_, c_) = xent_dims(cfg, name, 0);
    cpu::check_output_shape(cfg, name, 0, {});
    cpu::check_output_shape(cfg, name, 1, cfg.inputs[0].shape);
    rule_ = xent_rule(cfg, name, 2, c_);
    weighted_ = cfg.inputs.size() > 2;
    if (n_ > kMaxRows) fail(where_of(cfg), "{}: {} rows exceed a CUDA grid", name, n_);
    row_loss_ = std::make_unique<DeviceBuffer>(size_t(std::max<int64_t>(n_, 1)) * sizeof(double));
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    XentRule rule = rule_;
    if (weighted_) rule.weights = static_cast<const float*>(in[2]);
    launch_softmax_xent(static_cast<const float*>(in[0]), static_cast<const int64_t*>(in[1]),
                        static_cast<float*>(out[1]), static_cast<double*>(row_loss_->get()),
                        static_cast<float*>(out[0]), n_, c_, rule, ctx.stream->stream);
    ctx.stream->check_launch("softmax_cross_entropy");
  }

 private:
  int64_t n_ = 0, c_ = 0;
  XentRule rule_;
  bool weighted_ = false;
  std::unique_ptr<DeviceBuffer> row_loss_;
};

class SoftmaxCrossEntropyGrad final : public Kernel {
 public:
  SoftmaxCrossEntropyGrad(const KernelConfig& cfg) {
    const char* name = "softmax_cross_entropy_grad";
    cpu::check_arity(cfg, name, 3, 4, 1);
    cpu::check_dtypes(cfg, name, xent_input_dtypes(cfg, {DType::f32, DType::f32, DType::i64}), {DType::f32});
    const Shape& dloss = cfg.inputs[0].shape;
    if (numel(dloss) != 1 || dloss.size() > 1) fail(where_of(cfg), "{}: dloss {} must be a scalar", name, shape_str(dloss));
    std::tie(n_, c_) = xent_dims(cfg, name, 1);
    cpu::check_output_shape(cfg, name, 0, cfg.inputs[1].shape);
    rule_ = xent_rule(cfg, name, 3, c_);
    weighted_ = cfg.inputs.size() > 3;
    denom_ = std::make_unique<DeviceBuffer>(sizeof(float));
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    XentRule rule = rule_;
    if (weighted_) rule.weights = static_cast<const float*>(in[3]);
    launch_softmax_xent_grad(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                             static_cast<const int64_t*>(in[2]), static_cast<float*>(out[0]), n_, c_, rule,
                             static_cast<float*>(denom_->get()), ctx.stream->stream);
    ctx.stream->check_launch("softmax_cross_entropy_grad");
  }

 private:
  int64_t n_ = 0, c_ = 0;
  XentRule rule_;
  bool weighted_ = false;
  std::unique_ptr<DeviceBuffer> denom_;  // the mean's divisor, found on the device
};

class ClassifyMetrics final : public Kernel {
 public:
  ClassifyMetrics(const KernelConfig& cfg) {
    const char* name = "classify_metrics";
    cpu::check_arity(cfg, name, 2, 2, 3);
    cpu::check_dtypes(cfg, name, {DType::f32, DType::i64}, {DType::f32, DType::f32, DType::f32});
    std::tie(n_, c_) = xent_dims(cfg, name, 0);
    for (int k = 0; k < 3; ++k) cpu::check_output_shape(cfg, name, k, {n_});
    ignore_ = ignore_index(cfg);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_classify_metrics(static_cast<const float*>(in[0]), static_cast<const int64_t*>(in[1]), static_cast<float*>(out[0]),
                            static_cast<float*>(out[1]), static_cast<float*>(out[2]), n_, c_, ignore_, ctx.stream->stream);
    ctx.stream->check_launch("classify_metrics");
  }

 private:
  int64_t n_ = 0, c_ = 0, ignore_ = 0;  // ignore_: the constructor reads it
};

class MseLoss final : public Kernel {
 public:
  MseLoss(const KernelConfig& cfg) { std::tie(n_, denom_) = mse_loss_config(cfg, false); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_mse_loss(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<float*>(out[0]), n_, denom_,
                    ctx.stream->stream);
    ctx.stream->check_launch("mse_loss");
  }

 private:
  int64_t n_ = 0;
  double denom_ = 1;
};

class MseLossGrad final : public Kernel {
 public:
  MseLossGrad(const KernelConfig& cfg) {
    double denom = 1;
    std::tie(n_, denom) = mse_loss_config(cfg, true);
    denom_f_ = static_cast<float>(denom);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_mse_loss_grad(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<const float*>(in[2]),
                         static_cast<float*>(out[0]), n_, denom_f_, ctx.stream->stream);
    ctx.stream->check_launch("mse_loss_grad");
  }

 private:
  int64_t n_ = 0;
  float denom_f_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> make_softmax_cross_entropy(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxCrossEntropy>(cfg);
}
std::unique_ptr<Kernel> make_softmax_cross_entropy_grad(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxCrossEntropyGrad>(cfg);
}

std::unique_ptr<Kernel> make_classify_metrics(const KernelConfig& cfg) { return std::make_unique<ClassifyMetrics>(cfg); }

std::unique_ptr<Kernel> make_mse_loss(const KernelConfig& cfg) { return std::make_unique<MseLoss>(cfg); }
std::unique_ptr<Kernel> make_mse_loss_grad(const KernelConfig& cfg) { return std::make_unique<MseLossGrad>(cfg); }

}  // namespace of::kernels::cuda
