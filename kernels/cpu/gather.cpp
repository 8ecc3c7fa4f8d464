// SPDX-License-Identifier: Apache-2.0
// gather along attribute `axis` (default 0): for data [A..., V, D...] (A: the axes before `axis`)
// and indices of any shape I, Y [A..., I..., D...] = data[a..., indices[i...], d...]. Axis 0 is
// nn.Embedding's lookup; another axis is a tensor index (`x[:, 0]`, ViT's class token).
// gather_grad: dData = sum over i with indices[i] = v of dY[a, i, :], but for the padding row
// (padding_idx: nn.Embedding's), which stays zero.
// Indices are validated by the data source (tokens < vocabulary); one out of [-V, V) still never
// reads or writes out of bounds: its row of Y is zero and it adds nothing to the gradient.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// The index of item i, negative ones counted from the end (a bad one stays out of range).
int64_t index_of(const GatherGeometry& g, const void* indices, int64_t i) {
  const int64_t v = g.wide ? static_cast<const int64_t*>(indices)[i] : static_cast<const int32_t*>(indices)[i];
  return v < 0 ? v + g.vocab : v;
}

class Gather final : public Kernel {
 public:
  Gather(const KernelConfig& cfg) : s_(gather_geometry(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    auto* y = static_cast<float*>(out[0]);
    const size_t bytes = size_t(s_.row) * sizeof(float);
    for (int64_t a = 0; a < s_.outer; ++a) {
      const float* table = static_cast<const float*>(in[0]) + a * s_.vocab * s_.row;
      for (int64_t i = 0; i < s_.count; ++i, y += s_.row) {
        const int64_t v = index_of(s_, in[1], i);
        if (v >= 0 && v < s_.vocab) std::memcpy(y, table + v * s_.row, bytes);
        else std::memset(y, 0, bytes);
      }
    }
  }

 private:
  GatherGeometry s_;
};

class GatherGrad final : public Kernel {
 public:
  GatherGrad(const KernelConfig& cfg) : s_(gather_grad_geometry(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    std::memset(out[0], 0, size_t(s_.outer * s_.vocab * s_.row) * sizeof(float));
    for (int64_t a = 0; a < s_.outer; ++a) {
      float* table = static_cast<float*>(out[0]) + a * s_.vocab * s_.row;
      for (int64_t i = 0; i < s_.count; ++i, dy += s_.row) {
        const int64_t v = index_of(s_, in[1], i);
        if (v < 0 || v >= s_.vocab || v == s_.padding) continue;
        float* dst = table + v * s_.row;
        for (int64_t k = 0; k < s_.row; ++k) dst[k] += dy[k];
      }
    }
  }

 private:
  GatherGeometry s_;
};

}  // namespace

std::unique_ptr<Kernel> make_gather(const KernelConfig& cfg) { return std::make_unique<Gather>(cfg); }
std::unique_ptr<Kernel> make_gather_grad(const KernelConfig& cfg) { return std::make_unique<GatherGrad>(cfg); }

}  // namespace of::kernels::cpu
