// SPDX-License-Identifier: Apache-2.0
// dropout and dropout_grad: y = x * keep / (1 - ratio), keep an element with probability
// 1 - ratio. The mask comes from Philox4x32-10 (the counter-based generator of PyTorch's CUDA
// backend), keyed by the run's seed and the node's `stream` and counted by (the element's index
// in the whole logical tensor, the piece's index in the whole run): the same mask on any number
// of threads or devices and after a resume. The gradient recomputes the mask instead of storing it.
#include <cmath>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

struct Philox4x32 {
  uint32_t c[4];
};

// Ten rounds of Philox4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011).
Philox4x32 philox(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * ctr.c[0], p1 = uint64_t(kM1) * ctr.c[2];
    ctr = Philox4x32{{uint32_t(p1 >> 32) ^ ctr.c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ ctr.c[3] ^ k1, uint32_t(p0)}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

class Dropout final : public Kernel {
 public:
  Dropout(const KernelConfig& cfg, const char* name) {
    check_arity(cfg, name, 1, 1, 1);
    check_dtypes(cfg, name, DType::f32);
    check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
    n_ = numel(cfg.inputs[0].shape);
    const float ratio = cfg.attrs.get_float("ratio", -1.0f);
    if (!(ratio > 0.0f && ratio < 1.0f)) fail(where_of(cfg), "{}: ratio {} is outside (0, 1)", name, ratio);
    offset_ = cfg.attrs.get_int("offset", 0);
    if (offset_ < 0) fail(where_of(cfg), "{}: offset {} is negative", name, offset_);
    stream_ = uint32_t(cfg.attrs.get_int("stream", 0));
    // An element is kept when its 24-bit uniform is at least the ratio (ratio < 1: some survive).
    threshold_ = uint32_t(std::ceil(double(ratio) * double(1u << 24)));
    scale_ = 1.0f / (1.0f - ratio);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const auto k0 = uint32_t(ctx.seed), k1 = uint32_t(ctx.seed >> 32) ^ stream_;
    const auto piece = uint64_t(ctx.piece);
    for (int64_t i = 0; i < n_;) {
      const auto global = uint64_t(offset_ + i);
      const uint64_t block = global / 4;
      const Philox4x32 r = philox(Philox4x32{{uint32_t(block), uint32_t(block >> 32), uint32_t(piece), uint32_t(piece >> 32)}}, k0, k1);
      for (auto w = size_t(global % 4); w < 4 && i < n_; ++w, ++i) y[i] = (r.c[w] >> 8) >= threshold_ ? x[i] * scale_ : 0.0f;
    }
  }

 private:
  int64_t n_ = 0, offset_ = 0;
  uint32_t stream_ = 0, threshold_ = 0;
  float scale_ = 1.0f;
};

}  // namespace

// y = dropout(x); dx = dropout(dy) with the same mask: the same computation on dY.
std::unique_ptr<Kernel> make_dropout(const KernelConfig& cfg) { return std::make_unique<Dropout>(cfg, "dropout"); }
std::unique_ptr<Kernel> make_dropout_grad(const KernelConfig& cfg) { return std::make_unique<Dropout>(cfg, "dropout_grad"); }

}  // namespace of::kernels::cpu
