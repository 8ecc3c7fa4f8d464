// SPDX-License-Identifier: Apache-2.0
// softmax and log_softmax along one axis (opset-13 semantics), subtracting the max for stability.
// The tensor is viewed as [outer, n, inner]; for inner > 1 the reductions run across a row of
// `inner` lanes at once (member buffers sized at prepare time), so every loop stays contiguous.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/rules.h"
#include "kernels/cpu/row_reduce.h"
#include "kernels/cpu/vector_exp.h"

namespace of::kernels::cpu {

namespace {

class Softmax final : public Kernel {
 public:
  Softmax(const KernelConfig& cfg, const char* name, bool log);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  void run_rows(const float* x, float* y);  // inner == 1
  bool log_ = false;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
  std::vector<float> max_, sum_;  // inner_ lanes each
  std::vector<float> exps_;       // log_softmax's exp(x - max) of one row (or of inner_ lanes)
};

Softmax::Softmax(const KernelConfig& cfg, const char* name, bool log) : log_(log) {
  const AxisView v = softmax_view(cfg, name);
  outer_ = v.outer, n_ = v.n, inner_ = v.inner;
  if (inner_ > 1) {
    max_.resize(inner_);
    sum_.resize(inner_);
  }
  if (log_) exps_.resize(inner_ > 1 ? inner_ : n_);
}

void Softmax::run_rows(const float* x, float* y) {
  const int64_t n = n_;
  // Rows are independent: split between the kernel threads (parallel_split.h), but for
  // log_softmax, whose rows share the scratch row exps_.
#pragma omp parallel for schedule(static) if (!log_ && outer_ > 1 && outer_ * n >= kParallelElements)
  for (int64_t o = 0; o < outer_; ++o) {
    const float* xr = x + o * n;
    float* yr = y + o * n;
    const float m = row_max(xr, n);
    if (log_) {  // y is written only after the last read of x, so x may alias y
      float* e = exps_.data();
      exp_shifted(xr, m, e, n);
      const float sum = row_sum(e, n);
      // (x - m) - log(sum), not x - (m + log(sum)): m + log(sum) would round at |m|'s scale.
      const float log_sum = std::log(sum);
      for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] - m) - log_sum;
    } else {
      exp_shifted(xr, m, yr, n);
      const float sum = row_sum(yr, n);
      const float inv = 1.0f / sum;
      for (int64_t k = 0; k < n; ++k) yr[k] *= inv;
    }
  }
}

void Softmax::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  float* y = static_cast<float*>(out[0]);
  if (n_ == 0) return;
  if (inner_ == 1) return run_rows(x, y);
  float* mx = max_.data();
  float* sum = sum_.data();
  const int64_t plane = n_ * inner_;
  for (int64_t o = 0; o < outer_; ++o, x += plane, y += plane) {
    std::fill(mx, mx + inner_, -std::numeric_limits<float>::infinity());
    for (int64_t k = 0; k < n_; ++k)
      for (int64_t j = 0; j < inner_; ++j) mx[j] = std::max(mx[j], x[k * inner_ + j]);
    std::fill(sum, sum + inner_, 0.0f);
    if (log_) {
      float* e = exps_.data();
      for (int64_t k = 0; k < n_; ++k) {
        exp_minus(x + k * inner_, mx, e, inner_);
        for (int64_t j = 0; j < inner_; ++j) sum[j] += e[j];
      }
      for (int64_t j = 0; j < inner_; ++j) sum[j] = std::log(sum[j]);
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t j = 0; j < inner_; ++j)
          y[k * inner_ + j] = (x[k * inner_ + j] - mx[j]) - sum[j];
    } else {
      for (int64_t k = 0; k < n_; ++k) {
        exp_minus(x + k * inner_, mx, y + k * inner_, inner_);
        for (int64_t j = 0; j < inner_; ++j) sum[j] += y[k * inner_ + j];
      }
      for (int64_t j = 0; j < inner_; ++j) sum[j] = 1.0f / sum[j];
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t j = 0; j < inner_; ++j) y[k * inner_ + j] *= sum[j];
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> make_softmax(const KernelConfig& cfg) {
  return std::make_unique<Softmax>(cfg, "softmax", false);
}
std::unique_ptr<Kernel> make_log_softmax(const KernelConfig& cfg) {
  return std::make_unique<Softmax>(cfg, "log_softmax", true);
}

}  // namespace of::kernels::cpu
