// SPDX-License-Identifier: Apache-2.0
// slice: Y = X[..., start : start + Y.shape[axis], ...] along one axis (Concat's gradient: each
// input's part of dY). Viewed as [outer, dim, inner]: one memcpy per outer row.
#include <cstring>

#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Slice final : public Kernel {
 public:
  Slice(const KernelConfig& cfg) : g_(slice_geometry(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const uint8_t*>(in[0]);
    auto* y = static_cast<uint8_t*>(out[0]);
    if (g_.out_row == 0) return;  // an empty part: nothing to copy (and its buffers may be null)
    for (int64_t r = 0; r < g_.outer; ++r) std::memcpy(y + size_t(r) * g_.out_row, x + size_t(r) * g_.in_row + g_.offset, g_.out_row);
  }

 private:
  SliceGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_slice(const KernelConfig& cfg) { return std::make_unique<Slice>(cfg); }

}  // namespace of::kernels::cpu
