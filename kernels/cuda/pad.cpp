// SPDX-License-Identifier: Apache-2.0
// pad's and pad_grad's host side on the GPU: the CPU twins' rule (kernels/rules.h), then one launch.
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Pad final : public Kernel {
 public:
  Pad(const KernelConfig& cfg, bool grad) : s_(pad_space(cfg, grad)), grad_(grad) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto* a = static_cast<const float*>(in[0]);
    auto* b = static_cast<float*>(out[0]);
    if (grad_) launch_pad_grad(s_, a, b, ctx.stream->stream);
    else launch_pad(s_, a, b, ctx.stream->stream);
    ctx.stream->check_launch(grad_ ? "pad_grad" : "pad");
  }

 private:
  PadSpace s_;
  bool grad_;
};

}  // namespace

std::unique_ptr<Kernel> make_pad(const KernelConfig& cfg) { return std::make_unique<Pad>(cfg, false); }
std::unique_ptr<Kernel> make_pad_grad(const KernelConfig& cfg) { return std::make_unique<Pad>(cfg, true); }

}  // namespace of::kernels::cuda
