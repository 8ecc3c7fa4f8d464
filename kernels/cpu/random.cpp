// SPDX-License-Identifier: Apache-2.0
// random: a tensor of uniform or normal numbers per piece (kernels/random_draw.h: the draw the
// CUDA twin shares). It reads no input (a *Like op's input gives only the shape).
#include "kernels/cpu/factories.h"
#include "kernels/random_draw.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Random final : public Kernel {
 public:
  explicit Random(const KernelConfig& cfg) : g_(random_geometry(cfg)) {}
  void run(const RunCtx& ctx, const void* const*, void* const* out) override {
    auto* y = static_cast<float*>(out[0]);
    const auto k0 = uint32_t(ctx.seed), k1 = uint32_t(ctx.seed >> 32) ^ g_.stream;
    for (int64_t i = 0; i < g_.n; ++i) y[i] = random_at(g_, uint64_t(i), uint64_t(ctx.piece), k0, k1);
  }

 private:
  RandomGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_random(const KernelConfig& cfg) { return std::make_unique<Random>(cfg); }

}  // namespace of::kernels::cpu
