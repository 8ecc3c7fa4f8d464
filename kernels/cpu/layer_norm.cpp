// SPDX-License-Identifier: Apache-2.0
// Layer normalization over the trailing dims from `axis` (rows of n elements), and its gradients:
//   layer_norm            (x, scale[, bias]) -> y = xhat * scale + bias, xhat = (x - mean) * rstd
//   layer_norm_grad       (dy, x, scale)     -> dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale
//   layer_norm_scale_grad (dy, x)            -> dscale = sum over rows of dy * xhat
// Statistics are recomputed from x in each (rows are short; nothing is kept between kernels).
// Sums per row accumulate in double, as torch's CPU kernel does for its moments.
#include <cmath>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

struct Rows {
  int64_t rows = 0, n = 0;
  float eps = 1e-5f;
};

Rows rows_of(const KernelConfig& cfg, const char* name, const Shape& x) {
  const int64_t axis = cfg.attrs.get_int("axis", -1);
  if (axis < 0 || axis >= int64_t(x.size())) fail(where_of(cfg), "{}: axis {} does not fit {}", name, axis, shape_str(x));
  Rows r;
  r.rows = 1;
  r.n = 1;
  for (int64_t k = 0; k < int64_t(x.size()); ++k) (k < axis ? r.rows : r.n) *= x[size_t(k)];
  r.eps = cfg.attrs.get_float("epsilon", 1e-5f);
  if (!(r.eps > 0.0f)) fail(where_of(cfg), "{}: epsilon {} must be positive", name, r.eps);
  return r;
}

// mean and 1/sqrt(var + eps) of one row.
std::pair<float, float> moments(const float* x, int64_t n, float eps) {
  double sum = 0.0, sq = 0.0;
  for (int64_t k = 0; k < n; ++k) sum += x[k];
  const double mean = sum / double(n);
  for (int64_t k = 0; k < n; ++k) sq += (x[k] - mean) * (x[k] - mean);
  return {float(mean), float(1.0 / std::sqrt(sq / double(n) + double(eps)))};
}

class LayerNorm final : public Kernel {
 public:
  LayerNorm(const KernelConfig& cfg) {
    check_arity(cfg, "layer_norm", 2, 3, 1);
    check_dtypes(cfg, "layer_norm", DType::f32);
    r_ = rows_of(cfg, "layer_norm", cfg.inputs[0].shape);
    for (size_t i = 1; i < cfg.inputs.size(); ++i)
      if (numel(cfg.inputs[i].shape) != r_.n) fail(where_of(cfg), "layer_norm: input {} has {} elements, rows have {}", i, numel(cfg.inputs[i].shape), r_.n);
    check_output_shape(cfg, "layer_norm", 0, cfg.inputs[0].shape);
    bias_ = cfg.inputs.size() > 2;
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    const auto* scale = static_cast<const float*>(in[1]);
    const auto* bias = bias_ ? static_cast<const float*>(in[2]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    for (int64_t r = 0; r < r_.rows; ++r, x += r_.n, y += r_.n) {
      const auto [mean, rstd] = moments(x, r_.n, r_.eps);
      for (int64_t k = 0; k < r_.n; ++k) y[k] = (x[k] - mean) * rstd * scale[k] + (bias ? bias[k] : 0.0f);
    }
  }

 private:
  Rows r_;
  bool bias_ = false;
};

class LayerNormGrad final : public Kernel {
 public:
  LayerNormGrad(const KernelConfig& cfg) {
    check_arity(cfg, "layer_norm_grad", 3, 3, 1);
    check_dtypes(cfg, "layer_norm_grad", DType::f32);
    r_ = rows_of(cfg, "layer_norm_grad", cfg.inputs[1].shape);
    check_input_shape(cfg, "layer_norm_grad", 0, "dY", cfg.inputs[1].shape);
    if (numel(cfg.inputs[2].shape) != r_.n) fail(where_of(cfg), "layer_norm_grad: scale has {} elements, rows have {}", numel(cfg.inputs[2].shape), r_.n);
    check_output_shape(cfg, "layer_norm_grad", 0, cfg.inputs[1].shape);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    const auto* scale = static_cast<const float*>(in[2]);
    auto* dx = static_cast<float*>(out[0]);
    for (int64_t r = 0; r < r_.rows; ++r, x += r_.n, dy += r_.n, dx += r_.n) {
      const auto [mean, rstd] = moments(x, r_.n, r_.eps);
      double g_sum = 0.0, gx_sum = 0.0;
      for (int64_t k = 0; k < r_.n; ++k) {
        const double g = double(dy[k]) * scale[k];
        g_sum += g;
        gx_sum += g * double((x[k] - mean) * rstd);
      }
      const float g_mean = float(g_sum / double(r_.n)), gx_mean = float(gx_sum / double(r_.n));
      for (int64_t k = 0; k < r_.n; ++k) {
        const float xhat = (x[k] - mean) * rstd;
        dx[k] = rstd * (dy[k] * scale[k] - g_mean - xhat * gx_mean);
      }
    }
  }

 private:
  Rows r_;
};

class LayerNormScaleGrad final : public Kernel {
 public:
  LayerNormScaleGrad(const KernelConfig& cfg) {
    check_arity(cfg, "layer_norm_scale_grad", 2, 2, 1);
    check_dtypes(cfg, "layer_norm_scale_grad", DType::f32);
    r_ = rows_of(cfg, "layer_norm_scale_grad", cfg.inputs[1].shape);
    check_input_shape(cfg, "layer_norm_scale_grad", 0, "dY", cfg.inputs[1].shape);
    if (numel(cfg.outputs[0].shape) != r_.n) fail(where_of(cfg), "layer_norm_scale_grad: output has {} elements, rows have {}", numel(cfg.outputs[0].shape), r_.n);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    auto* ds = static_cast<float*>(out[0]);
    for (int64_t k = 0; k < r_.n; ++k) ds[k] = 0.0f;
    for (int64_t r = 0; r < r_.rows; ++r, x += r_.n, dy += r_.n) {
      const auto [mean, rstd] = moments(x, r_.n, r_.eps);
      for (int64_t k = 0; k < r_.n; ++k) ds[k] += dy[k] * (x[k] - mean) * rstd;
    }
  }

 private:
  Rows r_;
};

}  // namespace

std::unique_ptr<Kernel> make_layer_norm(const KernelConfig& cfg) { return std::make_unique<LayerNorm>(cfg); }
std::unique_ptr<Kernel> make_layer_norm_grad(const KernelConfig& cfg) { return std::make_unique<LayerNormGrad>(cfg); }
std::unique_ptr<Kernel> make_layer_norm_scale_grad(const KernelConfig& cfg) { return std::make_unique<LayerNormScaleGrad>(cfg); }

}  // namespace of::kernels::cpu
