// SPDX-License-Identifier: Apache-2.0
// softmax, log_softmax and their gradients along one axis, the tensor viewed as [outer, n, inner]
// (the CPU twins: kernels/cpu/softmax.cpp, softmax_grad.cpp). The last axis (inner 1, attention's
// case) is one block per row with block reductions; another axis is one thread per (outer, inner)
// lane walking its n elements. Outputs may alias inputs: each element is written by the thread
// that read it, after the reductions over it are done.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void softmax_rows(bool log, const float* x, float* y, int64_t n) {
  __shared__ float shared[kRowThreads];
  const float* xr = x + int64_t(blockIdx.x) * n;
  float* yr = y + int64_t(blockIdx.x) * n;
  float m = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, xr[k]);
  m = block_reduce(m, shared, MaxOp{});
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += expf(xr[k] - m);
  sum = block_reduce(sum, shared, SumF{});
  if (log) {  // (x - m) - log(sum), as the CPU twin: m + log(sum) would round at |m|'s scale
    const float ls = logf(sum);
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) yr[k] = (xr[k] - m) - ls;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) yr[k] = expf(xr[k] - m) * inv;
  }
}

__global__ void softmax_lanes(bool log, const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  const int64_t lanes = outer * inner;
  for (int64_t l = first_index(); l < lanes; l += grid_stride()) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    float m = -FLT_MAX;
    for (int64_t k = 0; k < n; ++k) m = fmaxf(m, x[base + k * inner]);
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) sum += expf(x[base + k * inner] - m);
    const float ls = logf(sum), inv = 1.0f / sum;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = base + k * inner;
      y[i] = log ? (x[i] - m) - ls : expf(x[i] - m) * inv;
    }
  }
}

__global__ void softmax_grad_rows(bool log, const float* dy, const float* y, float* dx, int64_t n) {
  __shared__ float shared[kRowThreads];
  const int64_t off = int64_t(blockIdx.x) * n;
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += log ? dy[off + k] : dy[off + k] * y[off + k];
  sum = block_reduce(sum, shared, SumF{});
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const int64_t i = off + k;
    dx[i] = log ? dy[i] - expf(y[i]) * sum : y[i] * (dy[i] - sum);
  }
}

__global__ void softmax_grad_lanes(bool log, const float* dy, const float* y, float* dx, int64_t outer, int64_t n,
                                   int64_t inner) {
  const int64_t lanes = outer * inner;
  for (int64_t l = first_index(); l < lanes; l += grid_stride()) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = base + k * inner;
      sum += log ? dy[i] : dy[i] * y[i];
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = base + k * inner;
      dx[i] = log ? dy[i] - expf(y[i]) * sum : y[i] * (dy[i] - sum);
    }
  }
}

// masked_softmax (kernels/rules.h): softmax_rows on x with -inf where row r % cond_rows of cond
// says masked; its gradient softmax_grad_rows' with +0 there.
__global__ void masked_softmax_rows(const float* x, const uint8_t* cond, bool masked, float* y, int64_t n, int64_t cond_rows) {
  __shared__ float shared[kRowThreads];
  const float* xr = x + int64_t(blockIdx.x) * n;
  const uint8_t* c = cond + (int64_t(blockIdx.x) % cond_rows) * n;
  float* yr = y + int64_t(blockIdx.x) * n;
  auto at = [&](int64_t k) { return (c[k] != 0) == masked ? -INFINITY : xr[k]; };
  float m = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, at(k));
  m = block_reduce(m, shared, MaxOp{});
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += expf(at(k) - m);
  sum = block_reduce(sum, shared, SumF{});
  const float inv = 1.0f / sum;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) yr[k] = expf(at(k) - m) * inv;
}

__global__ void masked_softmax_grad_rows(const float* dy, const float* y, const uint8_t* cond, bool masked, float* dx, int64_t n,
                                         int64_t cond_rows) {
  __shared__ float shared[kRowThreads];
  const int64_t off = int64_t(blockIdx.x) * n;
  const uint8_t* c = cond + (int64_t(blockIdx.x) % cond_rows) * n;
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += dy[off + k] * y[off + k];
  sum = block_reduce(sum, shared, SumF{});
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const int64_t i = off + k;
    dx[i] = (c[k] != 0) == masked ? 0.0f : y[i] * (dy[i] - sum);
  }
}

}  // namespace

void launch_masked_softmax(const float* x, const uint8_t* cond, bool masked, float* y, int64_t rows, int64_t n, int64_t cond_rows,
                           cudaStream_t stream) {
  if (rows * n == 0) return;
  masked_softmax_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(x, cond, masked, y, n, cond_rows);
}

void launch_masked_softmax_grad(const float* dy, const float* y, const uint8_t* cond, bool masked, float* dx, int64_t rows, int64_t n,
                                int64_t cond_rows, cudaStream_t stream) {
  if (rows * n == 0) return;
  masked_softmax_grad_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(dy, y, cond, masked, dx, n, cond_rows);
}

void launch_softmax(bool log, const float* x, float* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  if (outer * n * inner == 0) return;
  if (inner == 1)
    softmax_rows<<<unsigned(outer), kRowThreads, 0, stream>>>(log, x, y, n);
  else
    softmax_lanes<<<blocks_for(outer * inner), kThreads, 0, stream>>>(log, x, y, outer, n, inner);
}

void launch_softmax_grad(bool log, const float* dy, const float* y, float* dx, int64_t outer, int64_t n, int64_t inner,
                         cudaStream_t stream) {
  if (outer * n * inner == 0) return;
  if (inner == 1)
    softmax_grad_rows<<<unsigned(outer), kRowThreads, 0, stream>>>(log, dy, y, dx, n);
  else
    softmax_grad_lanes<<<blocks_for(outer * inner), kThreads, 0, stream>>>(log, dy, y, dx, outer, n, inner);
}

}  // namespace of::kernels::cuda
