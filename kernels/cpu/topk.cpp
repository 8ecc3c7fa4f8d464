// SPDX-License-Identifier: Apache-2.0
// topk and topk_grad (kernels/topk_space.h: the selection the CUDA twins share): per row around
// the axis its k largest (or smallest) values and their positions; the gradient puts dY's values
// back at those positions, zeros elsewhere.
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class TopK final : public Kernel {
 public:
  explicit TopK(const KernelConfig& cfg) : s_(topk_space(cfg, false)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    for (int64_t r = 0; r < s_.outer * s_.inner; ++r) topk_row(s_, x, r, static_cast<float*>(out[0]), static_cast<int64_t*>(out[1]));
  }

 private:
  TopKSpace s_;
};

class TopKGrad final : public Kernel {
 public:
  explicit TopKGrad(const KernelConfig& cfg) : s_(topk_space(cfg, true)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* indices = static_cast<const int64_t*>(in[1]);
    for (int64_t r = 0; r < s_.outer * s_.inner; ++r) topk_grad_row(s_, dy, indices, r, static_cast<float*>(out[0]));
  }

 private:
  TopKSpace s_;
};

}  // namespace

std::unique_ptr<Kernel> make_topk(const KernelConfig& cfg) { return std::make_unique<TopK>(cfg); }
std::unique_ptr<Kernel> make_topk_grad(const KernelConfig& cfg) { return std::make_unique<TopKGrad>(cfg); }

}  // namespace of::kernels::cpu
