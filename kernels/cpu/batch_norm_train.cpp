// SPDX-License-Identifier: Apache-2.0
// batch_norm_train, batch_norm_train_grad, batch_norm_stats_update: torch.nn.BatchNorm{1,2,3}d
// in train mode over X [N,C,*spatial]. The forward normalizes with the batch statistics (biased
// variance) and outputs the unbiased variance too; the update (a task of its own, so that the
// forward pass never waits on the running statistics' readers) blends both into the running
// statistics with PyTorch's momentum and counts num_batches_tracked. Sums are kept in double.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

// X [N,C,*spatial] seen as N blocks of C channels of `inner` contiguous values.
struct ChannelView {
  int64_t n = 0, c = 0, inner = 1;
  int64_t m() const { return n * inner; }  // values per channel
};

// Checks X's rank and that inputs [first, last] are [C] vectors (`names` index by input).
ChannelView channel_view(const KernelConfig& cfg, const char* kernel, int x_index, int first,
                         int last, const char* const* names) {
  const Shape& x = cfg.inputs[size_t(x_index)].shape;
  if (x.size() < 2) fail(where_of(cfg), "{}: X {} needs rank >= 2", kernel, shape_str(x));
  ChannelView v;
  v.n = x[0];
  v.c = x[1];
  for (size_t i = 2; i < x.size(); ++i) v.inner *= x[i];
  for (int i = first; i <= last; ++i) check_input_shape(cfg, kernel, i, names[i], Shape{v.c});
  return v;
}

class BatchNormTrain final : public Kernel {
 public:
  BatchNormTrain(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  ChannelView v_;
  double epsilon_ = 1e-5;
};

BatchNormTrain::BatchNormTrain(const KernelConfig& cfg) {
  check_arity(cfg, "batch_norm_train", 3, 3, 4);
  check_dtypes(cfg, "batch_norm_train", DType::f32);
  static const char* const names[] = {"x", "scale", "bias"};
  v_ = channel_view(cfg, "batch_norm_train", 0, 1, 2, names);
  // PyTorch refuses this too: the unbiased variance would divide by m - 1 = 0.
  if (v_.m() < 2)
    fail(where_of(cfg), "batch_norm_train: X {} has {} values per channel, needs more than 1",
         shape_str(cfg.inputs[0].shape), v_.m());
  check_output_shape(cfg, "batch_norm_train", 0, cfg.inputs[0].shape);
  for (int i = 1; i < 4; ++i) check_output_shape(cfg, "batch_norm_train", i, Shape{v_.c});
  epsilon_ = cfg.attrs.get_float("epsilon", 1e-5f);
  if (!(epsilon_ >= 0) || !std::isfinite(epsilon_))
    fail(where_of(cfg), "batch_norm_train: epsilon {} must be finite and >= 0", epsilon_);
}

void BatchNormTrain::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  const float* scale = static_cast<const float*>(in[1]);
  const float* bias = static_cast<const float*>(in[2]);
  float* y = static_cast<float*>(out[0]);
  float* saved_mean = static_cast<float*>(out[1]);
  float* saved_invstd = static_cast<float*>(out[2]);
  float* batch_var = static_cast<float*>(out[3]);
  const int64_t plane = v_.c * v_.inner;  // stride between batch items
  const double m = double(v_.m());
  for (int64_t c = 0; c < v_.c; ++c) {
    // Two passes (mean, then squared deviations): no cancellation when |mean| >> std.
    double sum = 0;
    for (int64_t b = 0; b < v_.n; ++b) {
      const float* xc = x + b * plane + c * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) sum += xc[i];
    }
    const double mean = sum / m;
    double sq = 0;
    for (int64_t b = 0; b < v_.n; ++b) {
      const float* xc = x + b * plane + c * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) {
        const double d = xc[i] - mean;
        sq += d * d;
      }
    }
    const double var = sq / m;
    const double invstd = 1.0 / std::sqrt(var + epsilon_);
    const float mf = float(mean), a = float(invstd * scale[c]), s = bias[c];
    for (int64_t b = 0; b < v_.n; ++b) {
      const float* xc = x + b * plane + c * v_.inner;
      float* yc = y + b * plane + c * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) yc[i] = (xc[i] - mf) * a + s;
    }
    saved_mean[c] = mf;
    saved_invstd[c] = float(invstd);
    batch_var[c] = float(var * m / (m - 1));  // unbiased, for the running variance
  }
}

// (batch mean, batch unbiased variance, running mean, running var, num_batches_tracked) ->
// the last three, in place: running = (1 - momentum) running + momentum batch, as torch's
// batch_norm_cpu_update_stats computes it (in double), and num_batches_tracked + 1.
class BatchNormStatsUpdate final : public Kernel {
 public:
  explicit BatchNormStatsUpdate(const KernelConfig& cfg) {
    check_arity(cfg, "batch_norm_stats_update", 5, 5, 3);
    const int64_t c = cfg.inputs[0].shape.size() == 1 ? cfg.inputs[0].shape[0] : -1;
    if (c < 0) fail(where_of(cfg), "batch_norm_stats_update: input 0 {} is not [C]", shape_str(cfg.inputs[0].shape));
    for (int i = 0; i < 4; ++i) {
      check_input_shape(cfg, "batch_norm_stats_update", i, "statistic", Shape{c});
      if (cfg.inputs[size_t(i)].dtype != DType::f32) fail(where_of(cfg), "batch_norm_stats_update: input {} is not f32", i);
    }
    if (cfg.inputs[4].dtype != DType::i64 || numel(cfg.inputs[4].shape) != 1)
      fail(where_of(cfg), "batch_norm_stats_update: input 4 (num_batches_tracked) must be one i64");
    check_output_shape(cfg, "batch_norm_stats_update", 0, Shape{c});
    check_output_shape(cfg, "batch_norm_stats_update", 1, Shape{c});
    if (cfg.outputs[2].dtype != DType::i64 || numel(cfg.outputs[2].shape) != 1)
      fail(where_of(cfg), "batch_norm_stats_update: output 2 (num_batches_tracked) must be one i64");
    c_ = c;
    momentum_ = cfg.attrs.get_float("momentum", 0.1f);
    if (!std::isfinite(momentum_)) fail(where_of(cfg), "batch_norm_stats_update: momentum {} is not finite", momentum_);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* mean = static_cast<const float*>(in[0]);
    const float* var = static_cast<const float*>(in[1]);
    const float* rm = static_cast<const float*>(in[2]);
    const float* rv = static_cast<const float*>(in[3]);
    float* rm_out = static_cast<float*>(out[0]);  // in place: out[0] is in[2], and so on
    float* rv_out = static_cast<float*>(out[1]);
    for (int64_t c = 0; c < c_; ++c) {
      const double m = rm[c], v = rv[c];
      rm_out[c] = float(momentum_ * mean[c] + (1 - momentum_) * m);
      rv_out[c] = float(momentum_ * var[c] + (1 - momentum_) * v);
    }
    int64_t n;
    std::memcpy(&n, in[4], 8);
    if (n < std::numeric_limits<int64_t>::max()) ++n;  // a hostile checkpoint's count saturates
    std::memcpy(out[2], &n, 8);
  }

 private:
  int64_t c_ = 0;
  double momentum_ = 0.1;
};

class BatchNormTrainGrad final : public Kernel {
 public:
  BatchNormTrainGrad(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  ChannelView v_;
};

BatchNormTrainGrad::BatchNormTrainGrad(const KernelConfig& cfg) {
  check_arity(cfg, "batch_norm_train_grad", 5, 5, 3);
  check_dtypes(cfg, "batch_norm_train_grad", DType::f32);
  static const char* const names[] = {"dy", "x", "scale", "saved_mean", "saved_invstd"};
  v_ = channel_view(cfg, "batch_norm_train_grad", 1, 2, 4, names);
  check_input_shape(cfg, "batch_norm_train_grad", 0, "dy", cfg.inputs[1].shape);
  check_output_shape(cfg, "batch_norm_train_grad", 0, cfg.inputs[1].shape);
  check_output_shape(cfg, "batch_norm_train_grad", 1, Shape{v_.c});
  check_output_shape(cfg, "batch_norm_train_grad", 2, Shape{v_.c});
}

void BatchNormTrainGrad::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* dy = static_cast<const float*>(in[0]);
  const float* x = static_cast<const float*>(in[1]);
  const float* scale = static_cast<const float*>(in[2]);
  const float* saved_mean = static_cast<const float*>(in[3]);
  const float* saved_invstd = static_cast<const float*>(in[4]);
  float* dx = static_cast<float*>(out[0]);
  float* dscale = static_cast<float*>(out[1]);
  float* dbias = static_cast<float*>(out[2]);
  const int64_t plane = v_.c * v_.inner;
  const double m = double(v_.m());
  for (int64_t c = 0; c < v_.c; ++c) {
    const double mean = saved_mean[c], invstd = saved_invstd[c];
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t b = 0; b < v_.n; ++b) {
      const int64_t o = b * plane + c * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) {
        sum_dy += dy[o + i];
        sum_dy_xhat += dy[o + i] * ((x[o + i] - mean) * invstd);
      }
    }
    dbias[c] = float(sum_dy);
    dscale[c] = float(sum_dy_xhat);
    // dx = scale*invstd/m * (m*dy - sum(dy) - xhat*sum(dy*xhat)): y's dependence on x through
    // the batch mean and variance, as PyTorch's batch_norm_backward computes it.
    const double k = scale[c] * invstd / m;
    for (int64_t b = 0; b < v_.n; ++b) {
      const int64_t o = b * plane + c * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) {
        const double xhat = (x[o + i] - mean) * invstd;
        dx[o + i] = float(k * (m * dy[o + i] - sum_dy - xhat * sum_dy_xhat));
      }
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> make_batch_norm_train(const KernelConfig& cfg) {
  return std::make_unique<BatchNormTrain>(cfg);
}
std::unique_ptr<Kernel> make_batch_norm_train_grad(const KernelConfig& cfg) {
  return std::make_unique<BatchNormTrainGrad>(cfg);
}
std::unique_ptr<Kernel> make_batch_norm_stats_update(const KernelConfig& cfg) {
  return std::make_unique<BatchNormStatsUpdate>(cfg);
}

}  // namespace of::kernels::cpu
