// SPDX-License-Identifier: Apache-2.0
// accumulate: (grad, lr, step) -> (mean grad, lr, step) over micro_batches (k) acts. The task
// keeps one output slot for k acts (its register has acts_per_piece k): the first act copies the
// gradient in, the next add theirs, and the k-th scales the sum by 1/k and passes the step's
// scalars on, so the optimizer update after it runs once per step. Acts arrive in piece order
// from piece 0, so a counter knows where a micro-batch falls in its step.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Accumulate final : public Kernel {
 public:
  Accumulate(const KernelConfig& cfg) : k_(accumulate_micro_batches(cfg)), n_(numel(cfg.inputs[0].shape)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* g = static_cast<const float*>(in[0]);
    auto* acc = static_cast<float*>(out[0]);
    if (seen_ == 0) {
      std::memcpy(acc, g, size_t(n_) * sizeof(float));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < n_; ++i) acc[i] += g[i];
    }
    if (++seen_ < k_) return;
    seen_ = 0;
    const float inv = 1.0f / float(k_);
#pragma omp simd
    for (int64_t i = 0; i < n_; ++i) acc[i] *= inv;
    std::memcpy(out[1], in[1], sizeof(float));
    std::memcpy(out[2], in[2], sizeof(float));
  }

 private:
  int64_t k_ = 1, n_ = 0, seen_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_accumulate(const KernelConfig& cfg) { return std::make_unique<Accumulate>(cfg); }

}  // namespace of::kernels::cpu
