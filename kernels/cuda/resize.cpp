// SPDX-License-Identifier: Apache-2.0
// resize's and resize_grad's host side on the GPU: the CPU twins' rule (kernels/rules.h), one launch.
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Resize final : public Kernel {
 public:
  Resize(const KernelConfig& cfg, bool grad) : s_(resize_space(cfg, grad)), grad_(grad) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto* a = static_cast<const float*>(in[0]);
    auto* b = static_cast<float*>(out[0]);
    if (grad_) launch_resize_grad(s_, a, b, ctx.stream->stream);
    else launch_resize(s_, a, b, ctx.stream->stream);
    ctx.stream->check_launch(grad_ ? "resize_grad" : "resize");
  }

 private:
  ResizeSpace s_;
  bool grad_;
};

}  // namespace

std::unique_ptr<Kernel> make_resize(const KernelConfig& cfg) { return std::make_unique<Resize>(cfg, false); }
std::unique_ptr<Kernel> make_resize_grad(const KernelConfig& cfg) { return std::make_unique<Resize>(cfg, true); }

}  // namespace of::kernels::cuda
