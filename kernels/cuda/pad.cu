// SPDX-License-Identifier: Apache-2.0
// pad and pad_grad on the GPU: kernels/pad_space.h's index math, one thread per element written.
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

// The multi-index of flat element i over dims[0..rank), last axis fastest.
__device__ void unflatten(int64_t i, const int64_t* dims, int rank, int64_t* idx) {
  for (int d = rank - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

__global__ void pad_kernel(PadSpace s, int64_t total, const float* x, float* y) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t idx[PadSpace::kMaxRank];
    unflatten(i, s.out_dims, s.rank, idx);
    int64_t src = 0;
    bool fill = false;
    for (int d = 0; d < s.rank; ++d) {
      const int64_t j = pad_source(s, d, idx[d]);
      fill = fill || j < 0;
      src = src * s.in_dims[d] + (j < 0 ? 0 : j);
    }
    y[i] = fill ? s.value : x[src];
  }
}

__global__ void pad_grad_kernel(PadSpace s, int64_t total, const float* dy, float* dx) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t idx[PadSpace::kMaxRank];
    unflatten(i, s.in_dims, s.rank, idx);
    dx[i] = pad_grad_at(s, dy, idx);
  }
}

int64_t elements(const int64_t* dims, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

}  // namespace

void launch_pad(const PadSpace& s, const float* x, float* y, cudaStream_t stream) {
  const int64_t total = elements(s.out_dims, s.rank);
  if (total <= 0) return;
  pad_kernel<<<blocks_for(total), kThreads, 0, stream>>>(s, total, x, y);
}

void launch_pad_grad(const PadSpace& s, const float* dy, float* dx, cudaStream_t stream) {
  const int64_t total = elements(s.in_dims, s.rank);
  if (total <= 0) return;
  pad_grad_kernel<<<blocks_for(total), kThreads, 0, stream>>>(s, total, dy, dx);
}

}  // namespace of::kernels::cuda
