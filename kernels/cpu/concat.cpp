// SPDX-License-Identifier: Apache-2.0
// concat along attr axis, any number of inputs, any dtype: for each of the `outer` slices,
// one memcpy per input of its contiguous block (dim[axis] * inner elements), then the zero tail.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Concat final : public Kernel {
 public:
  Concat(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  int64_t outer_ = 1;
  std::vector<size_t> block_bytes_;  // per input
  size_t tail_bytes_ = 0;
};

Concat::Concat(const KernelConfig& cfg) {
  ConcatGeometry g = concat_geometry(cfg);
  outer_ = g.outer;
  block_bytes_ = std::move(g.block_bytes);
  tail_bytes_ = g.tail_bytes;
}

void Concat::run(const RunCtx&, const void* const* in, void* const* out) {
  auto* y = static_cast<unsigned char*>(out[0]);
  for (int64_t o = 0; o < outer_; ++o) {
    for (size_t k = 0; k < block_bytes_.size(); ++k) {
      const size_t n = block_bytes_[k];
      if (n == 0) continue;
      std::memcpy(y, static_cast<const unsigned char*>(in[k]) + o * n, n);
      y += n;
    }
    if (tail_bytes_ > 0) std::memset(y, 0, tail_bytes_);
    y += tail_bytes_;
  }
}

}  // namespace

std::unique_ptr<Kernel> make_concat(const KernelConfig& cfg) {
  return std::make_unique<Concat>(cfg);
}

}  // namespace of::kernels::cpu
