// SPDX-License-Identifier: Apache-2.0
// random's host side on the GPU: the CPU twin's rule (kernels/rules.h), its draw (random_draw.h).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Random final : public Kernel {
 public:
  explicit Random(const KernelConfig& cfg) : g_(random_geometry(cfg)) {}
  void run(const RunCtx& ctx, const void* const*, void* const* out) override {
    const auto k0 = uint32_t(ctx.seed), k1 = uint32_t(ctx.seed >> 32) ^ g_.stream;
    launch_random(g_, static_cast<float*>(out[0]), uint64_t(ctx.piece), k0, k1, ctx.stream->stream);
    ctx.stream->check_launch("random");
  }

 private:
  RandomGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_random(const KernelConfig& cfg) { return std::make_unique<Random>(cfg); }

}  // namespace of::kernels::cuda
