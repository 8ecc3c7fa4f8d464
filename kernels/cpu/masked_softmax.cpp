// SPDX-License-Identifier: Apache-2.0
// masked_softmax and its gradient (kernels/rules.h): attention's Where(mask, -inf, scores) and
// Softmax in one act, and their two gradients in one. Each row is first written masked into y
// and then run through softmax.cpp's own steps (row_max, exp_shifted, row_sum, the scale), so
// that y is bit for bit what the two kernels gave; the gradient is softmax_grad.cpp's row loop
// with +0 where masked, as Where's gradient writes it. No [rows, n] intermediate is written or
// kept for the backward pass.
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/cpu/row_reduce.h"
#include "kernels/cpu/vector_clones.h"
#include "kernels/cpu/vector_exp.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// y = x, or -inf where cond says masked: a select the compiler vectorizes.
OF_VECTOR_CLONES void masked_row(const float* __restrict x, const uint8_t* __restrict cond, bool masked, float* __restrict y, int64_t n) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < n; ++k) y[k] = (cond[k] != 0) == masked ? minus_inf : x[k];
}

class MaskedSoftmax final : public Kernel {
 public:
  explicit MaskedSoftmax(const KernelConfig& cfg) : v_(masked_softmax_view(cfg, "masked_softmax", false)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    const auto* cond = static_cast<const uint8_t*>(in[1]);
    float* y = static_cast<float*>(out[0]);
    const int64_t n = v_.n, rows = v_.rows, cond_rows = v_.cond_rows;
    const bool masked = v_.masked;
    // Rows are independent: split between the kernel threads (parallel_split.h).
#pragma omp parallel for schedule(static) if (rows > 1 && rows * n >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      float* yr = y + r * n;
      masked_row(x + r * n, cond + (r % cond_rows) * n, masked, yr, n);
      const float m = row_max(yr, n);
      exp_shifted(yr, m, yr, n);
      const float inv = 1.0f / row_sum(yr, n);
      for (int64_t k = 0; k < n; ++k) yr[k] *= inv;
    }
  }

 private:
  MaskedSoftmaxView v_;
};

class MaskedSoftmaxGrad final : public Kernel {
 public:
  explicit MaskedSoftmaxGrad(const KernelConfig& cfg) : v_(masked_softmax_view(cfg, "masked_softmax_grad", true)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    const float* y = static_cast<const float*>(in[1]);
    const auto* cond = static_cast<const uint8_t*>(in[2]);
    float* dx = static_cast<float*>(out[0]);
    const int64_t n = v_.n, rows = v_.rows, cond_rows = v_.cond_rows;
    const bool masked = v_.masked;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * n >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      const float* dyr = dy + r * n;
      const float* yr = y + r * n;
      const uint8_t* c = cond + (r % cond_rows) * n;
      float* dxr = dx + r * n;
      float s = 0.0f;  // softmax_grad's running sum, in its order
      for (int64_t k = 0; k < n; ++k) s += dyr[k] * yr[k];
      for (int64_t k = 0; k < n; ++k) dxr[k] = (c[k] != 0) == masked ? 0.0f : yr[k] * (dyr[k] - s);
    }
  }

 private:
  MaskedSoftmaxView v_;
};

}  // namespace

std::unique_ptr<Kernel> make_masked_softmax(const KernelConfig& cfg) { return std::make_unique<MaskedSoftmax>(cfg); }
std::unique_ptr<Kernel> make_masked_softmax_grad(const KernelConfig& cfg) { return std::make_unique<MaskedSoftmaxGrad>(cfg); }

}  // namespace of::kernels::cpu
