// SPDX-License-Identifier: Apache-2.0
// gather_elements and scatter_elements on the GPU (kernels/elements_space.h; host side in
// cuda/elements.cpp).
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void gather_elements_kernel(ElementsSpace s, const float* x, const void* indices, float* y) {
  for (int64_t e = first_index(); e < s.count; e += grid_stride()) {
    const int64_t off = s.data_offset(indices, e);
    y[e] = off < 0 ? 0.0f : x[off];
  }
}

// One thread per line: a line's elements address one line of y (the same coordinates off the
// axis), so threads never share a target, and each goes in order.
__global__ void scatter_elements_kernel(ElementsSpace s, ScatterMode mode, const void* indices, const float* updates, float* y) {
  const int64_t lines = s.lines(), n = s.idx_dims[s.axis];
  for (int64_t l = first_index(); l < lines; l += grid_stride())
    for (int64_t j = 0; j < n; ++j) {
      const int64_t e = s.element(l, j);
      const int64_t off = s.data_offset(indices, e);
      if (off >= 0) scatter_one(mode, y, off, updates, e);
    }
}

}  // namespace

void launch_gather_elements(const ElementsSpace& s, const float* x, const void* indices, float* y, cudaStream_t stream) {
  if (s.count > 0) gather_elements_kernel<<<blocks_for(s.count), kThreads, 0, stream>>>(s, x, indices, y);
}

void launch_scatter_elements(const ElementsSpace& s, ScatterMode mode, const void* indices, const float* updates, float* y,
                             cudaStream_t stream) {
  if (s.lines() > 0) scatter_elements_kernel<<<blocks_for(s.lines()), kThreads, 0, stream>>>(s, mode, indices, updates, y);
}

}  // namespace of::kernels::cuda
