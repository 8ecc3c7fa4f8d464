// SPDX-License-Identifier: Apache-2.0
// A block-wide reduction in shared memory for the row kernels (losses.cu, softmax.cu): every
// thread of the block calls it with its value and gets the block's result. The tree has a fixed
// shape, so a sum is the same bits on every run. blockDim.x must be a power of two, at most kRowThreads.
#pragma once

#include <cfloat>

namespace of::kernels::cuda {

inline constexpr int kRowThreads = 256;

template <class T, class Op>
__device__ T block_reduce(T v, T* shared, Op op) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();  // shared is reused by the caller's next reduction
  return r;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }  // NaN ignored, as std::max
};
struct SumF {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct SumD {
  __device__ double operator()(double a, double b) const { return a + b; }
};

}  // namespace of::kernels::cuda
