// SPDX-License-Identifier: Apache-2.0
// softmax_grad (dx = y*(dy - sum_axis(dy*y))) and log_softmax_grad (dx = dy - exp(y)*sum_axis(dy))
// from (dy, y), y the forward output. Same [outer, n, inner] view as softmax.cpp: the axis sums
// for inner > 1 run across a row of `inner` lanes (a member buffer), so loops stay contiguous.
// dx may alias dy or y: each element is written after the last read of its sums' inputs.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class SoftmaxGrad final : public Kernel {
 public:
  SoftmaxGrad(const KernelConfig& cfg, const char* name, bool log);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  bool log_ = false;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
  std::vector<float> sum_;  // inner_ lanes
};

SoftmaxGrad::SoftmaxGrad(const KernelConfig& cfg, const char* name, bool log) : log_(log) {
  const AxisView v = softmax_grad_view(cfg, name);
  outer_ = v.outer, n_ = v.n, inner_ = v.inner;
  sum_.resize(inner_);
}

void SoftmaxGrad::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* dy = static_cast<const float*>(in[0]);
  const float* y = static_cast<const float*>(in[1]);
  float* dx = static_cast<float*>(out[0]);
  if (inner_ == 1 && !log_) {  // rows of the last axis: independent, split between the kernel threads
    const int64_t n = n_;
#pragma omp parallel for schedule(static) if (outer_ > 1 && outer_ * n >= kParallelElements)
    for (int64_t o = 0; o < outer_; ++o) {
      const float* dyr = dy + o * n;
      const float* yr = y + o * n;
      float* dxr = dx + o * n;
      float s = 0.0f;  // the same running sum as the general loop's sum[0]
      for (int64_t k = 0; k < n; ++k) s += dyr[k] * yr[k];
      for (int64_t k = 0; k < n; ++k) dxr[k] = yr[k] * (dyr[k] - s);
    }
    return;
  }
  float* sum = sum_.data();
  const int64_t plane = n_ * inner_;
  for (int64_t o = 0; o < outer_; ++o, dy += plane, y += plane, dx += plane) {
    std::fill(sum, sum + inner_, 0.0f);
    if (log_) {
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t j = 0; j < inner_; ++j) sum[j] += dy[k * inner_ + j];
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t j = 0; j < inner_; ++j) {
          const int64_t i = k * inner_ + j;
          dx[i] = dy[i] - std::exp(y[i]) * sum[j];
        }
    } else {
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t j = 0; j < inner_; ++j) sum[j] += dy[k * inner_ + j] * y[k * inner_ + j];
      for (int64_t k = 0; k < n_; ++k)
        for (int64_t j = 0; j < inner_; ++j) {
          const int64_t i = k * inner_ + j;
          dx[i] = y[i] * (dy[i] - sum[j]);
        }
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> make_softmax_grad(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxGrad>(cfg, "softmax_grad", false);
}
std::unique_ptr<Kernel> make_log_softmax_grad(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxGrad>(cfg, "log_softmax_grad", true);
}

}  // namespace of::kernels::cpu
