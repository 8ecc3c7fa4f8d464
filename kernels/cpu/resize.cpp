// SPDX-License-Identifier: Apache-2.0
// resize and resize_grad (nn.Upsample, F.interpolate): kernels/resize_space.h's math, which the
// CUDA twins share. The forward pass computes each row's taps once; the gradient sums each
// plane's dY into dX in row-major output order.
#include <vector>

#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Resize final : public Kernel {
 public:
  explicit Resize(const KernelConfig& cfg) : s_(resize_space(cfg, false)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    auto* y = static_cast<float*>(out[0]);
    for (int64_t p = 0; p < s_.planes; ++p)
      for (int64_t oh = 0; oh < s_.out_h; ++oh)
        for (int64_t ow = 0; ow < s_.out_w; ++ow) *y++ = resize_at(s_, x, p, oh, ow);
  }

 private:
  ResizeSpace s_;
};

class ResizeGrad final : public Kernel {
 public:
  explicit ResizeGrad(const KernelConfig& cfg) : s_(resize_space(cfg, true)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    for (int64_t p = 0; p < s_.planes; ++p) resize_grad_plane(s_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), p);
  }

 private:
  ResizeSpace s_;
};

}  // namespace

std::unique_ptr<Kernel> make_resize(const KernelConfig& cfg) { return std::make_unique<Resize>(cfg); }
std::unique_ptr<Kernel> make_resize_grad(const KernelConfig& cfg) { return std::make_unique<ResizeGrad>(cfg); }

}  // namespace of::kernels::cpu
