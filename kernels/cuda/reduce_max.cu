// SPDX-License-Identifier: Apache-2.0
// reduce_max and its gradient on the GPU: one thread per output element (kernels/
// reduce_max_space.h); the gradient zeroes dX, then each thread writes its dY at its first maximum.
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void reduce_max_kernel(ReduceMaxSpace s, const float* x, float* y) {
  for (int64_t o = first_index(); o < s.out_n; o += grid_stride()) y[o] = reduce_max_at(s, x, o);
}

__global__ void reduce_max_grad_kernel(ReduceMaxSpace s, const float* dy, const float* x, const float* y, float* dx) {
  for (int64_t o = first_index(); o < s.out_n; o += grid_stride()) dx[reduce_argmax_at(s, x, o, y[o])] = dy[o];
}

__global__ void argmax_kernel(ReduceMaxSpace s, const float* x, int64_t* y, bool last) {
  for (int64_t o = first_index(); o < s.out_n; o += grid_stride()) y[o] = reduce_argmax_position(s, x, o, last);
}

}  // namespace

void launch_argmax(const ReduceMaxSpace& s, const float* x, int64_t* y, bool last, cudaStream_t stream) {
  if (s.out_n > 0) argmax_kernel<<<blocks_for(s.out_n), kThreads, 0, stream>>>(s, x, y, last);
}

void launch_reduce_max(const ReduceMaxSpace& s, const float* x, float* y, cudaStream_t stream) {
  if (s.out_n > 0) reduce_max_kernel<<<blocks_for(s.out_n), kThreads, 0, stream>>>(s, x, y);
}

void launch_reduce_max_grad(const ReduceMaxSpace& s, const float* dy, const float* x, const float* y, float* dx, int64_t x_n,
                            cudaStream_t stream) {
  if (x_n > 0) cudaMemsetAsync(dx, 0, size_t(x_n) * sizeof(float), stream);
  if (s.out_n > 0) reduce_max_grad_kernel<<<blocks_for(s.out_n), kThreads, 0, stream>>>(s, dy, x, y, dx);
}

}  // namespace of::kernels::cuda
