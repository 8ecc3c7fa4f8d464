// SPDX-License-Identifier: Apache-2.0
// strided_slice's gradient on the GPU: dX zeroed, then one thread per element of dY writes it to
// its place (every place is written by one thread: no atomics, the CPU's bits).
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void strided_scatter_kernel(TransposeSpace s, int64_t offset, const float* dy, float* dx) {
  for (int64_t i = first_index(); i < s.total; i += grid_stride()) {
    int64_t rest = i, off = offset;
    for (int d = s.rank - 1; d >= 0; --d) {
      off += (rest % s.dims[d]) * s.in_strides[d];
      rest /= s.dims[d];
    }
    dx[off] = dy[i];
  }
}

}  // namespace

void launch_strided_scatter(const TransposeSpace& s, int64_t offset, const float* dy, float* dx, int64_t dx_elements,
                            cudaStream_t stream) {
  if (dx_elements > 0) cudaMemsetAsync(dx, 0, size_t(dx_elements) * sizeof(float), stream);
  if (s.total <= 0) return;
  strided_scatter_kernel<<<blocks_for(s.total), kThreads, 0, stream>>>(s, offset, dy, dx);
}

}  // namespace of::kernels::cuda
