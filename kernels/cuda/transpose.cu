// SPDX-License-Identifier: Apache-2.0
// transpose on the GPU: one thread per output element, its input offset from the collapsed
// output dims and their input strides (kernels/rules.h); writes coalesce, reads stride. Elements
// are moved as 1-, 2-, 4- or 8-byte words, so any dtype transposes.
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

template <class T>
__global__ void transpose_kernel(TransposeSpace s, const T* x, T* y) {
  for (int64_t i = first_index(); i < s.total; i += grid_stride()) {
    int64_t rest = i, off = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      off += (rest % s.dims[d]) * s.in_strides[d];
      rest /= s.dims[d];
    }
    y[i] = x[off];
  }
}

}  // namespace

void launch_transpose(const TransposeSpace& s, int64_t elem_size, const void* x, void* y, cudaStream_t stream) {
  if (s.total <= 0) return;
  const unsigned blocks = blocks_for(s.total);
  switch (elem_size) {
    case 1: transpose_kernel<<<blocks, kThreads, 0, stream>>>(s, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y)); break;
    case 2: transpose_kernel<<<blocks, kThreads, 0, stream>>>(s, static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y)); break;
    case 4: transpose_kernel<<<blocks, kThreads, 0, stream>>>(s, static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y)); break;
    default: transpose_kernel<<<blocks, kThreads, 0, stream>>>(s, static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y)); break;
  }
}

}  // namespace of::kernels::cuda
