// SPDX-License-Identifier: Apache-2.0
// strided_slice: Y = X[s0::k0, s1::k1, ...] with Y's extents (Slice at run time with steps, or on
// several axes: x[..., 0::2, 0::2, :], Swin's patch merging); strided_slice_grad writes dY back
// into those places of a zeroed dX. Both walk Y row by row along its last axis.
#include <cstring>
#include <vector>

#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// Calls row(x_offset, y_row) for every row of Y along its last axis, outer axes in order.
template <class Row>
void for_each_row(const StridedSliceGeometry& g, Row&& row) {
  const size_t rank = g.dims.size();
  if (g.total == 0) return;
  if (rank == 0) {
    row(g.offset, 0);
    return;
  }
  int64_t idx[8] = {};  // rank <= 8 (the rule checks): run() allocates nothing
  const int64_t width = g.dims[rank - 1];
  for (int64_t r = 0;; ++r) {
    int64_t off = g.offset;
    for (size_t d = 0; d + 1 < rank; ++d) off += idx[d] * g.in_strides[d];
    row(off, r * width);
    size_t d = rank - 1;
    for (; d-- > 0;) {
      if (++idx[d] < g.dims[d]) break;
      idx[d] = 0;
    }
    if (d == size_t(-1)) return;
  }
}

template <class T>
class StridedSlice final : public Kernel {
 public:
  explicit StridedSlice(const KernelConfig& cfg) : g_(strided_slice_geometry(cfg, false)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const T* x = static_cast<const T*>(in[0]);
    T* y = static_cast<T*>(out[0]);
    const int64_t width = g_.dims.empty() ? 1 : g_.dims.back(), step = g_.dims.empty() ? 1 : g_.in_strides.back();
    for_each_row(g_, [&](int64_t off, int64_t at) {
      for (int64_t j = 0; j < width; ++j) y[at + j] = x[off + j * step];
    });
  }

 private:
  StridedSliceGeometry g_;
};

class StridedSliceGrad final : public Kernel {
 public:
  explicit StridedSliceGrad(const KernelConfig& cfg) : g_(strided_slice_geometry(cfg, true)), dx_elements_(numel(cfg.outputs[0].shape)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    auto* dx = static_cast<float*>(out[0]);
    if (dx_elements_ > 0) std::memset(dx, 0, size_t(dx_elements_) * sizeof(float));
    const int64_t width = g_.dims.empty() ? 1 : g_.dims.back(), step = g_.dims.empty() ? 1 : g_.in_strides.back();
    for_each_row(g_, [&](int64_t off, int64_t at) {
      for (int64_t j = 0; j < width; ++j) dx[off + j * step] = dy[at + j];
    });
  }

 private:
  StridedSliceGeometry g_;
  int64_t dx_elements_;
};

}  // namespace

std::unique_ptr<Kernel> make_strided_slice(const KernelConfig& cfg) {
  if (cfg.inputs.size() == 1 && cfg.inputs[0].dtype == DType::i64) return std::make_unique<StridedSlice<int64_t>>(cfg);
  return std::make_unique<StridedSlice<float>>(cfg);
}
std::unique_ptr<Kernel> make_strided_slice_grad(const KernelConfig& cfg) { return std::make_unique<StridedSliceGrad>(cfg); }

}  // namespace of::kernels::cpu
