// SPDX-License-Identifier: Apache-2.0
// The batch norm family on the GPU, host side: batch_norm (inference), batch_norm_stats,
// batch_norm_apply (with a fused ReLU), batch_norm_train (stats, then apply), batch_norm_train_grad
// and batch_norm_stats_update, their configs checked by the CPU twins' rules (kernels/rules.h).
#include <tuple>

#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

const float* f(const void* p) { return static_cast<const float*>(p); }
float* f(void* p) { return static_cast<float*>(p); }

class BatchNorm final : public Kernel {
 public:
  explicit BatchNorm(const KernelConfig& cfg) { std::tie(v_, epsilon_) = batch_norm_config(cfg); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_batch_norm_infer(f(in[0]), f(in[1]), f(in[2]), f(in[3]), f(in[4]), epsilon_, f(out[0]), v_.n, v_.c, v_.inner, ctx.stream->stream);
    ctx.stream->check_launch("batch_norm");
  }

 private:
  ChannelView v_;
  float epsilon_ = 1e-5f;
};

class BatchNormStats final : public Kernel {
 public:
  explicit BatchNormStats(const KernelConfig& cfg) { std::tie(v_, epsilon_) = batch_norm_stats_config(cfg, "batch_norm_stats"); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_batch_norm_stats(f(in[0]), v_.n, v_.c, v_.inner, epsilon_, f(out[0]), f(out[1]), f(out[2]), ctx.stream->stream);
    ctx.stream->check_launch("batch_norm_stats");
  }

 private:
  ChannelView v_;
  double epsilon_ = 1e-5;
};

class BatchNormApply final : public Kernel {
 public:
  explicit BatchNormApply(const KernelConfig& cfg) { std::tie(v_, relu_) = batch_norm_apply_config(cfg); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_batch_norm_apply(f(in[0]), f(in[1]), f(in[2]), f(in[3]), f(in[4]), f(out[0]), v_.n, v_.c, v_.inner, relu_, ctx.stream->stream);
    ctx.stream->check_launch("batch_norm_apply");
  }

 private:
  ChannelView v_;
  bool relu_ = false;
};

// (X, scale, bias) -> (Y, mean, invstd, unbiased var): the statistics, then Y from them.
class BatchNormTrain final : public Kernel {
 public:
  explicit BatchNormTrain(const KernelConfig& cfg) { std::tie(v_, epsilon_) = batch_norm_stats_config(cfg, "batch_norm_train"); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_batch_norm_stats(f(in[0]), v_.n, v_.c, v_.inner, epsilon_, f(out[1]), f(out[2]), f(out[3]), ctx.stream->stream);
    launch_batch_norm_apply(f(in[0]), f(in[1]), f(in[2]), f(out[1]), f(out[2]), f(out[0]), v_.n, v_.c, v_.inner, false, ctx.stream->stream);
    ctx.stream->check_launch("batch_norm_train");
  }

 private:
  ChannelView v_;
  double epsilon_ = 1e-5;
};

class BatchNormTrainGrad final : public Kernel {
 public:
  explicit BatchNormTrainGrad(const KernelConfig& cfg) : v_(batch_norm_train_grad_config(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_batch_norm_train_grad(f(in[0]), f(in[1]), f(in[2]), f(in[3]), f(in[4]), f(out[0]), f(out[1]), f(out[2]), v_.n, v_.c, v_.inner,
                                 ctx.stream->stream);
    ctx.stream->check_launch("batch_norm_train_grad");
  }

 private:
  ChannelView v_;
};

class BatchNormStatsUpdate final : public Kernel {
 public:
  explicit BatchNormStatsUpdate(const KernelConfig& cfg) : geo_(batch_norm_stats_update_config(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    static_assert(sizeof(BatchNormCallStats::mean) / sizeof(float*) == size_t(kMaxBatchNormCalls));
    BatchNormCallStats calls;
    const auto k = size_t(geo_.calls);
    for (size_t i = 0; i < k; ++i) {
      calls.mean[i] = f(in[2 * i]);
      calls.var[i] = f(in[2 * i + 1]);
    }
    calls.count = int(k);
    launch_batch_norm_stats_update(calls, f(in[2 * k]), f(in[2 * k + 1]), static_cast<const int64_t*>(in[2 * k + 2]), f(out[0]),
                                   f(out[1]), static_cast<int64_t*>(out[2]), geo_.channels, geo_.momentum, geo_.cumulative,
                                   ctx.stream->stream);
    ctx.stream->check_launch("batch_norm_stats_update");
  }

 private:
  BatchNormStatsUpdateGeometry geo_;
};

}  // namespace

std::unique_ptr<Kernel> make_batch_norm(const KernelConfig& cfg) { return std::make_unique<BatchNorm>(cfg); }
std::unique_ptr<Kernel> make_batch_norm_stats(const KernelConfig& cfg) { return std::make_unique<BatchNormStats>(cfg); }
std::unique_ptr<Kernel> make_batch_norm_apply(const KernelConfig& cfg) { return std::make_unique<BatchNormApply>(cfg); }
std::unique_ptr<Kernel> make_batch_norm_train(const KernelConfig& cfg) { return std::make_unique<BatchNormTrain>(cfg); }
std::unique_ptr<Kernel> make_batch_norm_train_grad(const KernelConfig& cfg) { return std::make_unique<BatchNormTrainGrad>(cfg); }
std::unique_ptr<Kernel> make_batch_norm_stats_update(const KernelConfig& cfg) { return std::make_unique<BatchNormStatsUpdate>(cfg); }

}  // namespace of::kernels::cuda
