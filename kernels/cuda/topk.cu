// SPDX-License-Identifier: Apache-2.0
// topk and topk_grad on the GPU: one thread per row around the axis, each running the CPU
// twin's selection (kernels/topk_space.h).
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void topk_kernel(TopKSpace s, const float* x, float* values, int64_t* indices) {
  for (int64_t r = first_index(); r < s.outer * s.inner; r += grid_stride()) topk_row(s, x, r, values, indices);
}

__global__ void topk_grad_kernel(TopKSpace s, const float* dy, const int64_t* indices, float* dx) {
  for (int64_t r = first_index(); r < s.outer * s.inner; r += grid_stride()) topk_grad_row(s, dy, indices, r, dx);
}

}  // namespace

void launch_topk(const TopKSpace& s, const float* x, float* values, int64_t* indices, cudaStream_t stream) {
  const int64_t rows = s.outer * s.inner;
  if (rows > 0) topk_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(s, x, values, indices);
}

void launch_topk_grad(const TopKSpace& s, const float* dy, const int64_t* indices, float* dx, cudaStream_t stream) {
  const int64_t rows = s.outer * s.inner;
  if (rows > 0) topk_grad_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(s, dy, indices, dx);
}

}  // namespace of::kernels::cuda
