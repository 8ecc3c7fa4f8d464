// SPDX-License-Identifier: Apache-2.0
// transpose: Y = X permuted by attr perm (rank <= 8, elements of 1, 2, 4 or 8 bytes). The factory
// drops size-1 axes and merges axes that stay adjacent under perm, so e.g. [N,C,H,W] -> [N,H,W,C]
// becomes a 3-D [N, C, H*W] -> [N, H*W, C] walk.
#include <fmt/format.h>

#include <array>
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

constexpr size_t max_rank = 8;

class Transpose final : public Kernel {
 public:
  Transpose(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  template <class T>
  void walk(const T* x, T* y) const;

  // Collapsed output dims and, per output dim, the input stride in elements.
  size_t rank_ = 0;
  std::array<int64_t, max_rank> dims_{}, in_strides_{};
  int64_t total_ = 0, elem_size_ = 4;
};

Transpose::Transpose(const KernelConfig& cfg) {
  check_arity(cfg, "transpose", 1, 1, 1);
  const TensorDesc& x = cfg.inputs[0];
  if (cfg.outputs[0].dtype != x.dtype)
    fail(where_of(cfg), "transpose: input and output dtypes differ");
  elem_size_ = dtype_size(x.dtype);
  const size_t rank = x.shape.size();
  if (rank > max_rank) fail(where_of(cfg), "transpose: rank {} exceeds {}", rank, max_rank);
  std::vector<int64_t> perm = cfg.attrs.get_ints("perm");
  if (perm.empty())  // ONNX default: reverse the axes
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < static_cast<int64_t>(rank) && !seen[p];
    if (valid) seen[p] = true;
  }
  if (!valid)
    fail(where_of(cfg), "transpose: perm [{}] is not a permutation of {} axes",
         fmt::join(perm, ","), rank);
  Shape y(rank);
  for (size_t i = 0; i < rank; ++i) y[i] = x.shape[perm[i]];
  check_output_shape(cfg, "transpose", 0, y);
  total_ = numel(y);

  std::vector<int64_t> in_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * x.shape[i];
  // Walk output axes in order, dropping size-1 axes; merge an axis into the previous kept one
  // when the pair is contiguous in the input too (outer stride = inner stride * inner size).
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = x.shape[perm[i]], s = in_stride[perm[i]];
    if (d == 1) continue;
    if (rank_ > 0 && in_strides_[rank_ - 1] == s * d) {
      dims_[rank_ - 1] *= d;
      in_strides_[rank_ - 1] = s;
    } else {
      dims_[rank_] = d;
      in_strides_[rank_] = s;
      ++rank_;
    }
  }
  if (rank_ == 0) {
    dims_[0] = 1;
    in_strides_[0] = 1;
    rank_ = 1;
  }
}

template <class T>
void Transpose::walk(const T* x, T* y) const {
  const size_t last = rank_ - 1;
  const int64_t n = dims_[last], s = in_strides_[last];
  std::array<int64_t, max_rank> idx{};
  int64_t off = 0;
  for (int64_t done = 0; done < total_; done += n, y += n) {
    if (s == 1) {
      std::memcpy(y, x + off, n * sizeof(T));
    } else {
      for (int64_t i = 0; i < n; ++i) y[i] = x[off + i * s];
    }
    for (size_t i = last; i-- > 0;) {  // odometer over the outer output dims
      off += in_strides_[i];
      if (++idx[i] < dims_[i]) break;
      off -= in_strides_[i] * dims_[i];
      idx[i] = 0;
    }
  }
}

void Transpose::run(const RunCtx&, const void* const* in, void* const* out) {
  if (total_ == 0) return;
  switch (elem_size_) {
    case 1:
      return walk(static_cast<const uint8_t*>(in[0]), static_cast<uint8_t*>(out[0]));
    case 2:
      return walk(static_cast<const uint16_t*>(in[0]), static_cast<uint16_t*>(out[0]));
    case 4:
      return walk(static_cast<const uint32_t*>(in[0]), static_cast<uint32_t*>(out[0]));
    default:
      return walk(static_cast<const uint64_t*>(in[0]), static_cast<uint64_t*>(out[0]));
  }
}

}  // namespace

std::unique_ptr<Kernel> make_transpose(const KernelConfig& cfg) {
  return std::make_unique<Transpose>(cfg);
}

}  // namespace of::kernels::cpu
