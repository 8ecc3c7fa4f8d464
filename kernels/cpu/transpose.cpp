// SPDX-License-Identifier: Apache-2.0
// transpose: Y = X permuted by attr perm (rank <= 8, elements of 1, 2, 4 or 8 bytes). The factory
// drops size-1 axes and merges axes that stay adjacent under perm, so e.g. [N,C,H,W] -> [N,H,W,C]
// becomes a 3-D [N, C, H*W] -> [N, H*W, C] walk. When the last two output axes swap the input's
// last two (a matrix transpose per outer index: an nn.Linear weight, attention's K^T), the
// matrix is copied in square tiles, so the strided reads of one tile stay in cache; a plain
// walk of a [768, 256] weight reads a new cache line for every element. From kParallelElements
// the kernel threads split the output's matrices (or rows) between them.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

constexpr size_t max_rank = 8;

class Transpose final : public Kernel {
 public:
  Transpose(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  template <class T>
  void walk(const T* x, T* y, int64_t begin, int64_t end) const;
  template <class T>
  void tiled(const T* x, T* y, int64_t begin, int64_t end) const;

  // Collapsed output dims and, per output dim, the input stride in elements.
  size_t rank_ = 0;
  std::array<int64_t, max_rank> dims_{}, in_strides_{};
  int64_t total_ = 0, elem_size_ = 4;
};

Transpose::Transpose(const KernelConfig& cfg) {
  const TransposeGeometry g = transpose_geometry(cfg);
  rank_ = g.dims.size();
  for (size_t i = 0; i < rank_; ++i) {
    dims_[i] = g.dims[i];
    in_strides_[i] = g.in_strides[i];
  }
  total_ = g.total;
  elem_size_ = g.elem_size;
}

// Output rows [begin, end) of the last axis's length: the odometer starts at row `begin`.
template <class T>
void Transpose::walk(const T* x, T* y, int64_t begin, int64_t end) const {
  const size_t last = rank_ - 1;
  const int64_t n = dims_[last], s = in_strides_[last];
  std::array<int64_t, max_rank> idx = odometer_at(begin, dims_, last);
  int64_t off = 0;
  for (size_t i = 0; i < last; ++i) off += idx[i] * in_strides_[i];
  y += begin * n;
  for (int64_t row = begin; row < end; ++row, y += n) {
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

// Output [outer..., rows, cols] from input [outer..., cols, rows]: the collapsed output's
// second-to-last axis is the input's contiguous one and the last walks the input by `rows`.
// Matrices [begin, end) of the outer dims.
template <class T>
void Transpose::tiled(const T* x, T* y, int64_t begin, int64_t end) const {
  constexpr int64_t tile = 32;
  const int64_t rows = dims_[rank_ - 2], cols = dims_[rank_ - 1], stride = in_strides_[rank_ - 1];
  std::array<int64_t, max_rank> idx = odometer_at(begin, dims_, rank_ - 2);
  int64_t off = 0;
  for (size_t i = 0; i + 2 < rank_; ++i) off += idx[i] * in_strides_[i];
  y += begin * rows * cols;
  for (int64_t m = begin; m < end; ++m, y += rows * cols) {
    for (int64_t r0 = 0; r0 < rows; r0 += tile)
      for (int64_t c0 = 0; c0 < cols; c0 += tile) {
        const int64_t r1 = std::min(rows, r0 + tile), c1 = std::min(cols, c0 + tile);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) y[r * cols + c] = x[off + r + c * stride];
      }
    for (size_t i = rank_ - 2; i-- > 0;) {  // odometer over the outer output dims
      off += in_strides_[i];
      if (++idx[i] < dims_[i]) break;
      off -= in_strides_[i] * dims_[i];
      idx[i] = 0;
    }
  }
}

void Transpose::run(const RunCtx&, const void* const* in, void* const* out) {
  if (total_ == 0) return;
  const bool matrix = rank_ >= 2 && in_strides_[rank_ - 2] == 1;
  // The kernel threads take contiguous runs of the output's matrices (or rows): a copy, the same
  // bytes on any thread count. One matrix (an nn.Linear weight) stays on one thread.
  const int64_t units = matrix ? total_ / (dims_[rank_ - 2] * dims_[rank_ - 1]) : total_ / dims_[rank_ - 1];
  auto go = [&](auto* x) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    T* y = static_cast<T*>(out[0]);
    const int threads = split_threads(units, total_);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      const auto [begin, end] = thread_share(units);
      if (matrix)
        tiled(x, y, begin, end);
      else
        walk(x, y, begin, end);
    }
  };
  switch (elem_size_) {
    case 1:
      return go(static_cast<const uint8_t*>(in[0]));
    case 2:
      return go(static_cast<const uint16_t*>(in[0]));
    case 4:
      return go(static_cast<const uint32_t*>(in[0]));
    default:
      return go(static_cast<const uint64_t*>(in[0]));
  }
}

}  // namespace

std::unique_ptr<Kernel> make_transpose(const KernelConfig& cfg) {
  return std::make_unique<Transpose>(cfg);
}

}  // namespace of::kernels::cpu
