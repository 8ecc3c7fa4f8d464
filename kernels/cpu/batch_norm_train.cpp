// SPDX-License-Identifier: Apache-2.0
// batch_norm_stats, batch_norm_apply, batch_norm_train_grad, batch_norm_stats_update:
// torch.nn.BatchNorm{1,2,3}d in train mode over X [N,C,*spatial]. The forward is two kernels, so
// that the backward pass keeps the statistics without Y: stats computes the batch mean, inverse
// standard deviation (biased variance) and unbiased variance; apply normalizes with them (and may
// apply a ReLU, fuse-activations' doing). The update (a task of its own, so that the forward pass
// never waits on the running statistics' readers) blends the mean and unbiased variance into the
// running statistics with PyTorch's momentum and counts num_batches_tracked. Sums are kept in
// double. batch_norm_train is the forward in one kernel, as plans of earlier versions name it.
// Channels are independent: with several kernel threads each takes whole channels (OpenMP), so
// every sum is one thread's, in the same order, and the results are the one-thread results.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// Channel c's batch statistics. Two passes (mean, then squared deviations): no cancellation when
// |mean| >> std.
struct Stats {
  double mean, invstd, unbiased_var;
};
Stats channel_stats(const float* x, const ChannelView& v, int64_t c, double epsilon) {
  const int64_t plane = v.c * v.inner;  // stride between batch items
  const double m = double(v.m());
  double sum = 0;
  for (int64_t b = 0; b < v.n; ++b) {
    const float* xc = x + b * plane + c * v.inner;
    for (int64_t i = 0; i < v.inner; ++i) sum += xc[i];
  }
  const double mean = sum / m;
  double sq = 0;
  for (int64_t b = 0; b < v.n; ++b) {
    const float* xc = x + b * plane + c * v.inner;
    for (int64_t i = 0; i < v.inner; ++i) {
      const double d = xc[i] - mean;
      sq += d * d;
    }
  }
  const double var = sq / m;
  return Stats{mean, 1.0 / std::sqrt(var + epsilon), var * m / (m - 1)};
}

// X -> (saved mean, saved inverse std, unbiased batch variance), each [C].
class BatchNormStats final : public Kernel {
 public:
  explicit BatchNormStats(const KernelConfig& cfg) { std::tie(v_, epsilon_) = batch_norm_stats_config(cfg, "batch_norm_stats"); }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
#pragma omp parallel for schedule(static) if (v_.c > 1)
    for (int64_t c = 0; c < v_.c; ++c) {
      const Stats s = channel_stats(x, v_, c, epsilon_);
      static_cast<float*>(out[0])[c] = float(s.mean);
      static_cast<float*>(out[1])[c] = float(s.invstd);
      static_cast<float*>(out[2])[c] = float(s.unbiased_var);
    }
  }

 private:
  ChannelView v_;
  double epsilon_ = 1e-5;
};

// (X, scale, bias, saved mean, saved inverse std) -> Y = (X - mean) * (invstd * scale) + bias,
// as PyTorch's batch_norm_cpu_transform_input computes it from the saved statistics; with
// activation = "relu", max(Y, 0).
class BatchNormApply final : public Kernel {
 public:
  explicit BatchNormApply(const KernelConfig& cfg) { std::tie(v_, relu_) = batch_norm_apply_config(cfg); }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    const float* scale = static_cast<const float*>(in[1]);
    const float* bias = static_cast<const float*>(in[2]);
    const float* mean = static_cast<const float*>(in[3]);
    const float* invstd = static_cast<const float*>(in[4]);
    float* y = static_cast<float*>(out[0]);
    const int64_t plane = v_.c * v_.inner;
#pragma omp parallel for schedule(static) if (v_.c > 1)
    for (int64_t c = 0; c < v_.c; ++c) {
      const float mf = mean[c], a = invstd[c] * scale[c], s = bias[c];
      for (int64_t b = 0; b < v_.n; ++b) {
        const float* xc = x + b * plane + c * v_.inner;
        float* yc = y + b * plane + c * v_.inner;
        if (relu_)
          for (int64_t i = 0; i < v_.inner; ++i) yc[i] = std::max((xc[i] - mf) * a + s, 0.0f);
        else
          for (int64_t i = 0; i < v_.inner; ++i) yc[i] = (xc[i] - mf) * a + s;
      }
    }
  }

 private:
  ChannelView v_;
  bool relu_ = false;
};

class BatchNormTrain final : public Kernel {
 public:
  BatchNormTrain(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  ChannelView v_;
  double epsilon_ = 1e-5;
};

BatchNormTrain::BatchNormTrain(const KernelConfig& cfg) { std::tie(v_, epsilon_) = batch_norm_stats_config(cfg, "batch_norm_train"); }

void BatchNormTrain::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  const float* scale = static_cast<const float*>(in[1]);
  const float* bias = static_cast<const float*>(in[2]);
  float* y = static_cast<float*>(out[0]);
  const int64_t plane = v_.c * v_.inner;  // stride between batch items
#pragma omp parallel for schedule(static) if (v_.c > 1)
  for (int64_t c = 0; c < v_.c; ++c) {
    const Stats st = channel_stats(x, v_, c, epsilon_);
    const float mf = float(st.mean), a = float(st.invstd * scale[c]), s = bias[c];
    for (int64_t b = 0; b < v_.n; ++b) {
      const float* xc = x + b * plane + c * v_.inner;
      float* yc = y + b * plane + c * v_.inner;
      for (int64_t i = 0; i < v_.inner; ++i) yc[i] = (xc[i] - mf) * a + s;
    }
    static_cast<float*>(out[1])[c] = mf;
    static_cast<float*>(out[2])[c] = float(st.invstd);
    static_cast<float*>(out[3])[c] = float(st.unbiased_var);
  }
}

// ((batch mean, batch unbiased variance) per call of the module, running mean, running var,
// num_batches_tracked) -> the last three, in place: for each call in order, running = (1 - f)
// running + f batch, as torch's batch_norm_cpu_update_stats computes it (in double, stored as
// float), and num_batches_tracked + 1. f is the momentum, or 1 / (num_batches_tracked + 1) for
// momentum=None, as nn.BatchNorm's forward gives it.
class BatchNormStatsUpdate final : public Kernel {
 public:
  explicit BatchNormStatsUpdate(const KernelConfig& cfg) : geo_(batch_norm_stats_update_config(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const size_t k = size_t(geo_.calls);
    const float* rm = static_cast<const float*>(in[2 * k]);
    const float* rv = static_cast<const float*>(in[2 * k + 1]);
    float* rm_out = static_cast<float*>(out[0]);  // in place: out[0] is in[2k], and so on
    float* rv_out = static_cast<float*>(out[1]);
    int64_t n;
    std::memcpy(&n, in[2 * k + 2], 8);
    for (int64_t c = 0; c < geo_.channels; ++c) {
      float m = rm[c], v = rv[c];
      for (size_t call = 0; call < k; ++call) {
        const double f = geo_.factor(saturating_add(n, int64_t(call)));
        m = float(f * static_cast<const float*>(in[2 * call])[c] + (1 - f) * double(m));
        v = float(f * static_cast<const float*>(in[2 * call + 1])[c] + (1 - f) * double(v));
      }
      rm_out[c] = m;
      rv_out[c] = v;
    }
    n = saturating_add(n, int64_t(k));  // a hostile checkpoint's count saturates
    std::memcpy(out[2], &n, 8);
  }

 private:
  static int64_t saturating_add(int64_t n, int64_t d) { return n > std::numeric_limits<int64_t>::max() - d ? std::numeric_limits<int64_t>::max() : n + d; }

  BatchNormStatsUpdateGeometry geo_;
};

class BatchNormTrainGrad final : public Kernel {
 public:
  BatchNormTrainGrad(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  ChannelView v_;
};

BatchNormTrainGrad::BatchNormTrainGrad(const KernelConfig& cfg) : v_(batch_norm_train_grad_config(cfg)) {}

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
#pragma omp parallel for schedule(static) if (v_.c > 1)
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

std::unique_ptr<Kernel> make_batch_norm_stats(const KernelConfig& cfg) {
  return std::make_unique<BatchNormStats>(cfg);
}
std::unique_ptr<Kernel> make_batch_norm_apply(const KernelConfig& cfg) {
  return std::make_unique<BatchNormApply>(cfg);
}
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
