// SPDX-License-Identifier: Apache-2.0
// split: X cut along attr `axis` into the outputs, whose sizes on that axis come from their
// shapes (unequal parts allowed). Viewed as [outer, dim, inner], each output gets one memcpy per
// outer row, any dtype.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Split final : public Kernel {
 public:
  Split(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  int64_t outer_ = 1;
  size_t in_row_ = 0;                 // bytes of X per outer row
  std::vector<size_t> row_, offset_;  // per output: bytes per outer row, offset in X's row
};

Split::Split(const KernelConfig& cfg) {
  SplitGeometry g = split_geometry(cfg);
  outer_ = g.outer;
  in_row_ = g.in_row;
  row_ = std::move(g.row);
  offset_ = std::move(g.offset);
}

void Split::run(const RunCtx&, const void* const* in, void* const* out) {
  const auto* x = static_cast<const unsigned char*>(in[0]);
  for (size_t k = 0; k < row_.size(); ++k) {
    const size_t n = row_[k];
    if (n == 0) continue;  // an empty part may have no buffer
    auto* y = static_cast<unsigned char*>(out[k]);
    const unsigned char* src = x + offset_[k];
    for (int64_t r = 0; r < outer_; ++r, y += n, src += in_row_) std::memcpy(y, src, n);
  }
}

}  // namespace

std::unique_ptr<Kernel> make_split(const KernelConfig& cfg) { return std::make_unique<Split>(cfg); }

}  // namespace of::kernels::cpu
