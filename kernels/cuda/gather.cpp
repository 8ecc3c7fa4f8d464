// SPDX-License-Identifier: Apache-2.0
// gather and gather_grad, host side on the GPU: the CPU twins' rules (kernels/rules.h).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Gather final : public Kernel {
 public:
  Gather(const KernelConfig& cfg, bool grad) : grad_(grad), g_(grad ? gather_grad_geometry(cfg) : gather_geometry(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (grad_)
      launch_gather_grad(static_cast<const float*>(in[0]), in[1], g_.wide, static_cast<float*>(out[0]), g_.outer,
                         g_.vocab, g_.row, g_.count, g_.padding, ctx.stream->stream);
    else
      launch_gather(static_cast<const float*>(in[0]), in[1], g_.wide, static_cast<float*>(out[0]), g_.outer, g_.vocab,
                    g_.row, g_.count, ctx.stream->stream);
    ctx.stream->check_launch(grad_ ? "gather_grad" : "gather");
  }

 private:
  bool grad_;
  GatherGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_gather(const KernelConfig& cfg) { return std::make_unique<Gather>(cfg, false); }
std::unique_ptr<Kernel> make_gather_grad(const KernelConfig& cfg) { return std::make_unique<Gather>(cfg, true); }

}  // namespace of::kernels::cuda
