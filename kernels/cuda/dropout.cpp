// SPDX-License-Identifier: Apache-2.0
// dropout and dropout_grad on the GPU, host side: the CPU twin's config rule (kernels/rules.h) and
// key (the run's seed and the node's stream, the piece's index: RunCtx).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Dropout final : public Kernel {
 public:
  Dropout(const KernelConfig& cfg, const char* name) : g_(dropout_geometry(cfg, name)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto k0 = uint32_t(ctx.seed), k1 = uint32_t(ctx.seed >> 32) ^ g_.stream;
    launch_dropout(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), g_.n, g_.offset, k0, k1, uint64_t(ctx.piece), g_.threshold,
                   g_.scale, ctx.stream->stream);
    ctx.stream->check_launch("dropout");
  }

 private:
  DropoutGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_dropout(const KernelConfig& cfg) { return std::make_unique<Dropout>(cfg, "dropout"); }
std::unique_ptr<Kernel> make_dropout_grad(const KernelConfig& cfg) { return std::make_unique<Dropout>(cfg, "dropout_grad"); }

}  // namespace of::kernels::cuda
