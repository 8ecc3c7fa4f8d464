// SPDX-License-Identifier: Apache-2.0
// resize on the GPU: one thread per output element; resize_grad one thread per plane, summing in
// the CPU kernel's order (kernels/resize_space.h): the same bits, no atomics.
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void resize_kernel(ResizeSpace s, const float* x, float* y) {
  const int64_t per_plane = s.out_h * s.out_w, total = s.planes * per_plane;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t p = i / per_plane, r = i % per_plane;
    y[i] = resize_at(s, x, p, r / s.out_w, r % s.out_w);
  }
}

__global__ void resize_grad_kernel(ResizeSpace s, const float* dy, float* dx) {
  for (int64_t p = first_index(); p < s.planes; p += grid_stride()) resize_grad_plane(s, dy, dx, p);
}

}  // namespace

void launch_resize(const ResizeSpace& s, const float* x, float* y, cudaStream_t stream) {
  const int64_t total = s.planes * s.out_h * s.out_w;
  if (total > 0) resize_kernel<<<blocks_for(total), kThreads, 0, stream>>>(s, x, y);
}

void launch_resize_grad(const ResizeSpace& s, const float* dy, float* dx, cudaStream_t stream) {
  if (s.planes > 0 && s.in_h * s.in_w > 0) resize_grad_kernel<<<blocks_for(s.planes), kThreads, 0, stream>>>(s, dy, dx);
}

}  // namespace of::kernels::cuda
