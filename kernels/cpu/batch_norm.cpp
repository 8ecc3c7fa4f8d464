// SPDX-License-Identifier: Apache-2.0
// batch_norm, inference form: Y = (X - mean) / sqrt(var + eps) * scale + B per channel of
// X [N,C,...]. Weights may change between runs, so the per-channel a, b are recomputed in run()
// into member buffers sized at prepare time.
#include <cmath>
#include <tuple>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class BatchNorm final : public Kernel {
 public:
  BatchNorm(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  int64_t n_ = 0, c_ = 0, inner_ = 1;
  float epsilon_ = 1e-5f;
  std::vector<float> a_, b_;  // y = a*x + b, per channel
};

BatchNorm::BatchNorm(const KernelConfig& cfg) {
  ChannelView v;
  std::tie(v, epsilon_) = batch_norm_config(cfg);
  n_ = v.n;
  c_ = v.c;
  inner_ = v.inner;
  a_.resize(size_t(c_));
  b_.resize(size_t(c_));
}

void BatchNorm::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  const float* scale = static_cast<const float*>(in[1]);
  const float* bias = static_cast<const float*>(in[2]);
  const float* mean = static_cast<const float*>(in[3]);
  const float* var = static_cast<const float*>(in[4]);
  float* y = static_cast<float*>(out[0]);
  for (int64_t c = 0; c < c_; ++c) {
    a_[c] = scale[c] / std::sqrt(var[c] + epsilon_);
    b_[c] = bias[c] - mean[c] * a_[c];
  }
  for (int64_t b = 0; b < n_; ++b)
    for (int64_t c = 0; c < c_; ++c, x += inner_, y += inner_) {
      const float a = a_[c], s = b_[c];
      for (int64_t i = 0; i < inner_; ++i) y[i] = a * x[i] + s;
    }
}

}  // namespace

std::unique_ptr<Kernel> make_batch_norm(const KernelConfig& cfg) {
  return std::make_unique<BatchNorm>(cfg);
}

}  // namespace of::kernels::cpu
