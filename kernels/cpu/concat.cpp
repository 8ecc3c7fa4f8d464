// SPDX-License-Identifier: Apache-2.0
// concat along attr axis, any number of inputs, any dtype: for each of the `outer` slices,
// one memcpy per input of its contiguous block (dim[axis] * inner elements).
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

class Concat final : public Kernel {
 public:
  Concat(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  int64_t outer_ = 1;
  std::vector<size_t> block_bytes_;  // per input
};

Concat::Concat(const KernelConfig& cfg) {
  if (cfg.inputs.empty() || cfg.outputs.size() != 1)
    fail(where_of(cfg), "concat: expected >= 1 inputs and 1 output, got {} and {}",
         cfg.inputs.size(), cfg.outputs.size());
  const TensorDesc& y = cfg.outputs[0];
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  const int64_t axis = cfg.attrs.get_int("axis", 0);
  if (axis < 0 || axis >= rank)
    fail(where_of(cfg), "concat: axis {} out of range for output {}", axis, shape_str(y.shape));
  for (int64_t i = 0; i < axis; ++i) outer_ *= y.shape[i];
  int64_t inner = 1, total = 0;
  for (int64_t i = axis + 1; i < rank; ++i) inner *= y.shape[i];
  for (size_t k = 0; k < cfg.inputs.size(); ++k) {
    const TensorDesc& x = cfg.inputs[k];
    bool ok = x.dtype == y.dtype && static_cast<int64_t>(x.shape.size()) == rank;
    for (int64_t i = 0; ok && i < rank; ++i) ok = i == axis || x.shape[i] == y.shape[i];
    if (!ok)
      fail(where_of(cfg), "concat: input {} ({} {}) does not fit output {} {} on axis {}", k,
           dtype_name(x.dtype), shape_str(x.shape), dtype_name(y.dtype), shape_str(y.shape), axis);
    total += x.shape[axis];
    block_bytes_.push_back(static_cast<size_t>(x.shape[axis] * inner * dtype_size(y.dtype)));
  }
  if (total != y.shape[axis])
    fail(where_of(cfg), "concat: inputs sum to {} along axis {}, output has {}", total, axis,
         y.shape[axis]);
}

void Concat::run(const RunCtx&, const void* const* in, void* const* out) {
  auto* y = static_cast<unsigned char*>(out[0]);
  for (int64_t o = 0; o < outer_; ++o)
    for (size_t k = 0; k < block_bytes_.size(); ++k) {
      const size_t n = block_bytes_[k];
      if (n == 0) continue;
      std::memcpy(y, static_cast<const unsigned char*>(in[k]) + o * n, n);
      y += n;
    }
}

}  // namespace

std::unique_ptr<Kernel> make_concat(const KernelConfig& cfg) {
  return std::make_unique<Concat>(cfg);
}

}  // namespace of::kernels::cpu
