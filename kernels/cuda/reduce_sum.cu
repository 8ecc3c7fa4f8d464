// SPDX-License-Identifier: Apache-2.0
// reduce_sum on the GPU: one thread per output element, summing its reduced elements in index
// order (as the CPU twin does per output; the order across merged dims is the same row-major one).
// Bias gradients ([N,C] -> [C]) read coalesced: neighbouring threads read neighbouring columns.
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

template <bool kL2>
__global__ void reduce_sum_kernel(ReduceSpace s, const float* x, float* y, float divisor) {
  // Element strides of each merged dim in the input (row-major).
  int64_t stride[kMaxReduceRuns];
  int64_t acc = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    stride[d] = acc;
    acc *= s.dims[d];
  }
  for (int64_t o = first_index(); o < s.out_n; o += grid_stride()) {
    int64_t rest = o, base = 0;
    for (int d = s.rank - 1; d >= 0; --d)
      if (!s.reduced[d]) {
        base += (rest % s.dims[d]) * stride[d];
        rest /= s.dims[d];
      }
    float sum = 0.0f;
    for (int64_t r = 0; r < s.reduce_n; ++r) {
      int64_t left = r, off = base;
      for (int d = s.rank - 1; d >= 0; --d)
        if (s.reduced[d]) {
          off += (left % s.dims[d]) * stride[d];
          left /= s.dims[d];
        }
      sum += kL2 ? x[off] * x[off] : x[off];
    }
    if (kL2) y[o] = sqrtf(sum);
    else y[o] = divisor == 1.0f ? sum : sum / divisor;
  }
}

}  // namespace

void launch_reduce_sum(const ReduceSpace& s, const float* x, float* y, float divisor, bool l2, cudaStream_t stream) {
  if (s.out_n <= 0) return;
  if (l2) reduce_sum_kernel<true><<<blocks_for(s.out_n), kThreads, 0, stream>>>(s, x, y, divisor);
  else reduce_sum_kernel<false><<<blocks_for(s.out_n), kThreads, 0, stream>>>(s, x, y, divisor);
}

}  // namespace of::kernels::cuda
