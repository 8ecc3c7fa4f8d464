// SPDX-License-Identifier: Apache-2.0
// split: X cut along attr `axis` into the outputs, whose sizes on that axis come from their
// shapes (unequal parts allowed). Viewed as [outer, dim, inner], each output gets one memcpy per
// outer row, any dtype.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

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
  if (cfg.inputs.size() != 1 || cfg.outputs.empty())
    fail(where_of(cfg), "split: expected 1 input and >= 1 outputs, got {} and {}",
         cfg.inputs.size(), cfg.outputs.size());
  const TensorDesc& x = cfg.inputs[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (!cfg.attrs.has("axis")) fail(where_of(cfg), "split: attribute 'axis' is required");
  const int64_t axis = cfg.attrs.get_int("axis", -1);
  if (axis < 0 || axis >= rank)
    fail(where_of(cfg), "split: axis {} out of range for input {}", axis, shape_str(x.shape));
  for (int64_t i = 0; i < axis; ++i) outer_ *= x.shape[size_t(i)];
  size_t inner = size_t(dtype_size(x.dtype));
  for (int64_t i = axis + 1; i < rank; ++i) inner *= size_t(x.shape[size_t(i)]);
  in_row_ = inner * size_t(x.shape[size_t(axis)]);
  int64_t total = 0;
  for (size_t k = 0; k < cfg.outputs.size(); ++k) {
    const TensorDesc& y = cfg.outputs[k];
    bool ok = y.dtype == x.dtype && static_cast<int64_t>(y.shape.size()) == rank;
    for (int64_t i = 0; ok && i < rank; ++i)
      ok = i == axis || y.shape[size_t(i)] == x.shape[size_t(i)];
    if (!ok)
      fail(where_of(cfg), "split: output {} ({} {}) does not fit input {} {} off axis {}", k,
           dtype_name(y.dtype), shape_str(y.shape), dtype_name(x.dtype), shape_str(x.shape), axis);
    offset_.push_back(inner * size_t(total));
    row_.push_back(inner * size_t(y.shape[size_t(axis)]));
    total += y.shape[size_t(axis)];
  }
  if (total != x.shape[size_t(axis)])
    fail(where_of(cfg), "split: outputs sum to {} along axis {}, input has {}", total, axis,
         x.shape[size_t(axis)]);
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
