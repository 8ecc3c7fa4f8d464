// SPDX-License-Identifier: Apache-2.0
// collective_part's boxes on the GPU: one thread per element of a box, its offsets in x and y from
// the box's dims and each tensor's strides; a later summand adds in place (each element of y is
// touched by one thread of one launch, launches in order on one stream: the CPU twin's order).
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

template <class T, bool kAdd>
__global__ void box_kernel(BoxSpace s, const T* x, T* y) {
  for (int64_t i = first_index(); i < s.total; i += grid_stride()) {
    int64_t rest = i, from = s.src, to = s.dst;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t k = rest % s.dims[d];
      rest /= s.dims[d];
      from += k * s.src_strides[d];
      to += k * s.dst_strides[d];
    }
    if constexpr (kAdd) y[to] += x[from];
    else y[to] = x[from];
  }
}

}  // namespace

void launch_box(const BoxSpace& s, int64_t elem_size, bool add, const void* x, void* y, cudaStream_t stream) {
  if (s.total <= 0) return;
  const unsigned blocks = blocks_for(s.total);
  if (add) box_kernel<float, true><<<blocks, kThreads, 0, stream>>>(s, static_cast<const float*>(x), static_cast<float*>(y));
  else if (elem_size == 4) box_kernel<uint32_t, false><<<blocks, kThreads, 0, stream>>>(s, static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y));
  else box_kernel<uint64_t, false><<<blocks, kThreads, 0, stream>>>(s, static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y));
}

}  // namespace of::kernels::cuda
