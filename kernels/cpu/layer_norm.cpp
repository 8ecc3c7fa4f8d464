// SPDX-License-Identifier: Apache-2.0
// Layer normalization over the trailing dims from `axis` (rows of n elements), and its gradients
// (instance normalization, its rows a channel's positions and its scale per channel, is below):
//   layer_norm            (x, scale[, bias]) -> y = xhat * scale + bias, xhat = (x - mean) * rstd
//   layer_norm_grad       (dy, x, scale)     -> dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale
//   layer_norm_scale_grad (dy, x)            -> dscale = sum over rows of dy * xhat
// Statistics are recomputed from x in each (rows are short; nothing is kept between kernels).
// Sums per row accumulate in double, as torch's CPU kernel does for its moments (in eight lanes).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/cpu/thread_workspace.h"
#include "kernels/cpu/vector_clones.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// The row sums below run in eight double lanes (element j into lane j % 8, combined pairwise):
// a single running sum waits on each add in turn, four of which made layer norm's gradient
// latency-bound (1024 rows of 256: 0.4 ms an act). A fixed order on every machine; in double, a
// float-rounded result rarely differs from the running sum's.
inline double pairwise(const double* lane) {
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// mean and 1/sqrt(var + eps) of one row.
OF_VECTOR_CLONES std::pair<float, float> moments(const float* __restrict x, int64_t n, float eps) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane[k] += x[j + k];
  double sum = pairwise(lane);
  for (; j < n; ++j) sum += x[j];
  const double mean = sum / double(n);
  double sq_lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) sq_lane[k] += (x[j + k] - mean) * (x[j + k] - mean);
  double sq = pairwise(sq_lane);
  for (; j < n; ++j) sq += (x[j] - mean) * (x[j] - mean);
  return {float(mean), float(1.0 / std::sqrt(sq / double(n) + double(eps)))};
}

// Sums over a row of g = dy * scale and of g * xhat, for layer_norm_grad.
OF_VECTOR_CLONES std::pair<double, double> grad_sums(const float* __restrict dy, const float* __restrict scale,
                                                     const float* __restrict x, float mean, float rstd, int64_t n) {
  double g_lane[8] = {0, 0, 0, 0, 0, 0, 0, 0}, gx_lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) {
      const double g = double(dy[j + k]) * scale[j + k];
      g_lane[k] += g;
      gx_lane[k] += g * double((x[j + k] - mean) * rstd);
    }
  double g_sum = pairwise(g_lane), gx_sum = pairwise(gx_lane);
  for (; j < n; ++j) {
    const double g = double(dy[j]) * scale[j];
    g_sum += g;
    gx_sum += g * double((x[j] - mean) * rstd);
  }
  return {g_sum, gx_sum};
}

class LayerNorm final : public Kernel {
 public:
  LayerNorm(const KernelConfig& cfg) : r_(layer_norm_rows(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    const auto* scale = static_cast<const float*>(in[1]);
    const auto* bias = r_.bias ? static_cast<const float*>(in[2]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    const int64_t n = r_.n;
    // Rows are independent: split between the kernel threads (parallel_split.h).
#pragma omp parallel for schedule(static) if (r_.rows > 1 && r_.rows * n >= kParallelElements)
    for (int64_t r = 0; r < r_.rows; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      const auto [mean, rstd] = moments(xr, n, r_.eps);
      for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] - mean) * rstd * scale[k] + (bias ? bias[k] : 0.0f);
    }
  }

 private:
  LayerNormRows r_;
};

class LayerNormGrad final : public Kernel {
 public:
  LayerNormGrad(const KernelConfig& cfg) : r_(layer_norm_grad_rows(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    const auto* scale = static_cast<const float*>(in[2]);
    auto* dx = static_cast<float*>(out[0]);
    const int64_t n = r_.n;
#pragma omp parallel for schedule(static) if (r_.rows > 1 && r_.rows * n >= kParallelElements)
    for (int64_t r = 0; r < r_.rows; ++r) {
      const float* xr = x + r * n;
      const float* dyr = dy + r * n;
      float* dxr = dx + r * n;
      const auto [mean, rstd] = moments(xr, n, r_.eps);
      const auto [g_sum, gx_sum] = grad_sums(dyr, scale, xr, mean, rstd, n);
      const float g_mean = float(g_sum / double(n)), gx_mean = float(gx_sum / double(n));
      for (int64_t k = 0; k < n; ++k) {
        const float xhat = (xr[k] - mean) * rstd;
        dxr[k] = rstd * (dyr[k] * scale[k] - g_mean - xhat * gx_mean);
      }
    }
  }

 private:
  LayerNormRows r_;
};

// Two passes, each split between the kernel threads as it stands: the rows' statistics (rows are
// independent), then the sums by columns (each column adds its rows in row order, as one thread
// does): the same bits on any thread count.
class LayerNormScaleGrad final : public Kernel {
 public:
  LayerNormScaleGrad(const KernelConfig& cfg) : r_(layer_norm_scale_grad_rows(cfg)) {}
  // The first pass's statistics, per row: the act's scratch (thread_workspace.h), not the kernel's.
  size_t workspace_bytes() const override { return 2 * size_t(std::max<int64_t>(r_.rows, 1)) * sizeof(float); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    auto* ds = static_cast<float*>(out[0]);
    const int64_t rows = r_.rows, n = r_.n;
    float* mean = static_cast<float*>(act_workspace(ctx, workspace_bytes()));
    float* rstd = mean + rows;
#pragma omp parallel if (rows > 1 && rows * n >= kParallelElements)
    {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) std::tie(mean[r], rstd[r]) = moments(x + r * n, n, r_.eps);
      // Columns in runs of whole cache lines, so that two threads never write one line.
      const auto [first_line, end_line] = thread_share((n + 15) / 16);
      const int64_t begin = std::min(n, first_line * 16), end = std::min(n, end_line * 16);
      for (int64_t c = begin; c < end; ++c) ds[c] = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        const float* dyr = dy + r * n;
        const float m = mean[r], s = rstd[r];
        for (int64_t c = begin; c < end; ++c) ds[c] += dyr[c] * (xr[c] - m) * s;
      }
    }
  }

 private:
  LayerNormRows r_;
};

// Instance normalization: the rows' statistics as layer norm's (moments), the scale and bias of
// row r those of channel r % C. The gradient of a row with scale s is s times layer norm's with
// a scale of ones: dx = rstd * (s dy - s mean(dy) - xhat s mean(dy xhat)).
class InstanceNorm final : public Kernel {
 public:
  InstanceNorm(const KernelConfig& cfg) : r_(instance_norm_rows(cfg, "instance_norm")) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    const auto* scale = static_cast<const float*>(in[1]);
    const auto* bias = static_cast<const float*>(in[2]);
    auto* y = static_cast<float*>(out[0]);
    const int64_t n = r_.n;
#pragma omp parallel for schedule(static) if (r_.rows > 1 && r_.rows * n >= kParallelElements)
    for (int64_t r = 0; r < r_.rows; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      const auto [mean, rstd] = moments(xr, n, r_.eps);
      const float s = scale[r % r_.channels], b = bias[r % r_.channels];
      for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] - mean) * rstd * s + b;
    }
  }

 private:
  InstanceNormRows r_;
};

class InstanceNormGrad final : public Kernel {
 public:
  InstanceNormGrad(const KernelConfig& cfg) : r_(instance_norm_rows(cfg, "instance_norm_grad")) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    const auto* scale = static_cast<const float*>(in[2]);
    auto* dx = static_cast<float*>(out[0]);
    const int64_t n = r_.n;
#pragma omp parallel for schedule(static) if (r_.rows > 1 && r_.rows * n >= kParallelElements)
    for (int64_t r = 0; r < r_.rows; ++r) {
      const float* xr = x + r * n;
      const float* dyr = dy + r * n;
      float* dxr = dx + r * n;
      const auto [mean, rstd] = moments(xr, n, r_.eps);
      const float s = scale[r % r_.channels];
      double g_sum = 0, gx_sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double g = double(dyr[k]) * s;
        g_sum += g;
        gx_sum += g * double((xr[k] - mean) * rstd);
      }
      const float g_mean = float(g_sum / double(n)), gx_mean = float(gx_sum / double(n));
      for (int64_t k = 0; k < n; ++k) {
        const float xhat = (xr[k] - mean) * rstd;
        dxr[k] = rstd * (dyr[k] * s - g_mean - xhat * gx_mean);
      }
    }
  }

 private:
  InstanceNormRows r_;
};

// dscale[c]: the sum of dy xhat over channel c's rows, in row order (the CUDA twin's order).
class InstanceNormScaleGrad final : public Kernel {
 public:
  InstanceNormScaleGrad(const KernelConfig& cfg) : r_(instance_norm_rows(cfg, "instance_norm_scale_grad")) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    auto* ds = static_cast<float*>(out[0]);
    const int64_t n = r_.n;
    for (int64_t c = 0; c < r_.channels; ++c) {
      double sum = 0;
      for (int64_t r = c; r < r_.rows; r += r_.channels) {
        const float* xr = x + r * n;
        const float* dyr = dy + r * n;
        const auto [mean, rstd] = moments(xr, n, r_.eps);
        for (int64_t k = 0; k < n; ++k) sum += double(dyr[k]) * double((xr[k] - mean) * rstd);
      }
      ds[c] = float(sum);
    }
  }

 private:
  InstanceNormRows r_;
};

}  // namespace

std::unique_ptr<Kernel> make_instance_norm(const KernelConfig& cfg) { return std::make_unique<InstanceNorm>(cfg); }
std::unique_ptr<Kernel> make_instance_norm_grad(const KernelConfig& cfg) { return std::make_unique<InstanceNormGrad>(cfg); }
std::unique_ptr<Kernel> make_instance_norm_scale_grad(const KernelConfig& cfg) { return std::make_unique<InstanceNormScaleGrad>(cfg); }

std::unique_ptr<Kernel> make_layer_norm(const KernelConfig& cfg) { return std::make_unique<LayerNorm>(cfg); }
std::unique_ptr<Kernel> make_layer_norm_grad(const KernelConfig& cfg) { return std::make_unique<LayerNormGrad>(cfg); }
std::unique_ptr<Kernel> make_layer_norm_scale_grad(const KernelConfig& cfg) { return std::make_unique<LayerNormScaleGrad>(cfg); }

}  // namespace of::kernels::cpu
