// SPDX-License-Identifier: Apache-2.0
// dropout and dropout_grad: y = x * keep / (1 - ratio), keep an element with probability
// 1 - ratio. The mask comes from Philox4x32-10 (the counter-based generator of PyTorch's CUDA
// backend), keyed by the run's seed and the node's `stream` and counted by (the element's index
// in the whole logical tensor, the piece's index in the whole run): the same mask on any number
// of threads or devices and after a resume. The gradient recomputes the mask instead of storing it.
#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/philox.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Dropout final : public Kernel {
 public:
  Dropout(const KernelConfig& cfg, const char* name) : g_(dropout_geometry(cfg, name)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const auto k0 = uint32_t(ctx.seed), k1 = uint32_t(ctx.seed >> 32) ^ g_.stream;
    const auto piece = uint64_t(ctx.piece);
    for (int64_t i = 0; i < g_.n;) {
      const auto global = uint64_t(g_.offset + i);
      const uint64_t block = global / 4;
      const Philox4x32 r = philox(Philox4x32{{uint32_t(block), uint32_t(block >> 32), uint32_t(piece), uint32_t(piece >> 32)}}, k0, k1);
      for (auto w = size_t(global % 4); w < 4 && i < g_.n; ++w, ++i) y[i] = (r.c[w] >> 8) >= g_.threshold ? x[i] * g_.scale : 0.0f;
    }
  }

 private:
  DropoutGeometry g_;
};

}  // namespace

// y = dropout(x); dx = dropout(dy) with the same mask: the same computation on dY.
std::unique_ptr<Kernel> make_dropout(const KernelConfig& cfg) { return std::make_unique<Dropout>(cfg, "dropout"); }
std::unique_ptr<Kernel> make_dropout_grad(const KernelConfig& cfg) { return std::make_unique<Dropout>(cfg, "dropout_grad"); }

}  // namespace of::kernels::cpu
