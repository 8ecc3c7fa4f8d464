// SPDX-License-Identifier: Apache-2.0
// slice: Y = X[..., start : start + Y.shape[axis], ...] along one axis (Concat's gradient: each
// input's part of dY). Viewed as [outer, dim, inner]: one memcpy per outer row.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

class Slice final : public Kernel {
 public:
  Slice(const KernelConfig& cfg) {
    check_arity(cfg, "slice", 1, 1, 1);
    const Shape& x = cfg.inputs[0].shape;
    const Shape& y = cfg.outputs[0].shape;
    if (cfg.outputs[0].dtype != cfg.inputs[0].dtype)
      fail(where_of(cfg), "slice: output dtype {} differs from the input's {}", dtype_name(cfg.outputs[0].dtype), dtype_name(cfg.inputs[0].dtype));
    const int64_t rank = int64_t(x.size());
    const int64_t axis = cfg.attrs.get_int("axis", -1);
    const int64_t start = cfg.attrs.get_int("start", -1);
    if (axis < 0 || axis >= rank || int64_t(y.size()) != rank)
      fail(where_of(cfg), "slice: axis {} does not fit input {} and output {}", axis, shape_str(x), shape_str(y));
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis && x[size_t(k)] != y[size_t(k)])
        fail(where_of(cfg), "slice: output {} differs from input {} off axis {}", shape_str(y), shape_str(x), axis);
    if (start < 0 || start > x[size_t(axis)] || y[size_t(axis)] > x[size_t(axis)] - start)
      fail(where_of(cfg), "slice: [{}, +{}) is outside axis {} of {}", start, y[size_t(axis)], axis, shape_str(x));
    const auto elem = size_t(dtype_size(cfg.inputs[0].dtype));
    size_t inner = elem;
    for (int64_t k = axis + 1; k < rank; ++k) inner *= size_t(x[size_t(k)]);
    for (int64_t k = 0; k < axis; ++k) outer_ *= x[size_t(k)];
    in_row_ = inner * size_t(x[size_t(axis)]);
    out_row_ = inner * size_t(y[size_t(axis)]);
    offset_ = inner * size_t(start);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const uint8_t*>(in[0]);
    auto* y = static_cast<uint8_t*>(out[0]);
    for (int64_t r = 0; r < outer_; ++r) std::memcpy(y + size_t(r) * out_row_, x + size_t(r) * in_row_ + offset_, out_row_);
  }

 private:
  int64_t outer_ = 1;
  size_t in_row_ = 0, out_row_ = 0, offset_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_slice(const KernelConfig& cfg) { return std::make_unique<Slice>(cfg); }

}  // namespace of::kernels::cpu
