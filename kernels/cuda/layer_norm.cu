// SPDX-License-Identifier: Apache-2.0
// Layer normalization and its gradients on the GPU (the CPU twin: kernels/cpu/layer_norm.cpp):
// one block per row; the row's sums in double, as the twin (and torch's CPU kernel) keeps them.
// The scale's gradient sums over rows per column in row order, from moments a first pass keeps.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

// The row's mean and 1/sqrt(var + eps), as the twin rounds them; every thread gets both.
__device__ void row_moments(const float* x, int64_t n, float eps, double* shared, float& mean, float& rstd) {
  double sum = 0.0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += x[k];
  const double mu = block_reduce(sum, shared, SumD{}) / double(n);
  double sq = 0.0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sq += (x[k] - mu) * (x[k] - mu);
  sq = block_reduce(sq, shared, SumD{});
  mean = float(mu);
  rstd = float(1.0 / sqrt(sq / double(n) + double(eps)));
}

__global__ void layer_norm_rows(const float* x, const float* scale, const float* bias, float* y, int64_t n, float eps) {
  __shared__ double shared[kRowThreads];
  const int64_t off = int64_t(blockIdx.x) * n;
  float mean, rstd;
  row_moments(x + off, n, eps, shared, mean, rstd);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x)
    y[off + k] = (x[off + k] - mean) * rstd * scale[k] + (bias ? bias[k] : 0.0f);
}

__global__ void layer_norm_grad_rows(const float* dy, const float* x, const float* scale, float* dx, int64_t n,
                                     float eps) {
  __shared__ double shared[kRowThreads];
  const int64_t off = int64_t(blockIdx.x) * n;
  float mean, rstd;
  row_moments(x + off, n, eps, shared, mean, rstd);
  double g_sum = 0.0, gx_sum = 0.0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const double g = double(dy[off + k]) * scale[k];
    g_sum += g;
    gx_sum += g * double((x[off + k] - mean) * rstd);
  }
  g_sum = block_reduce(g_sum, shared, SumD{});
  gx_sum = block_reduce(gx_sum, shared, SumD{});
  const float g_mean = float(g_sum / double(n)), gx_mean = float(gx_sum / double(n));
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float xhat = (x[off + k] - mean) * rstd;
    dx[off + k] = rstd * (dy[off + k] * scale[k] - g_mean - xhat * gx_mean);
  }
}

__global__ void moments_rows(const float* x, float* moments, int64_t n, float eps) {
  __shared__ double shared[kRowThreads];
  float mean, rstd;
  row_moments(x + int64_t(blockIdx.x) * n, n, eps, shared, mean, rstd);
  if (threadIdx.x == 0) {
    moments[2 * int64_t(blockIdx.x)] = mean;
    moments[2 * int64_t(blockIdx.x) + 1] = rstd;
  }
}

__global__ void scale_grad_columns(const float* dy, const float* x, const float* moments, float* ds, int64_t rows,
                                   int64_t n) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += dy[r * n + k] * (x[r * n + k] - moments[2 * r]) * moments[2 * r + 1];
    ds[k] = sum;
  }
}

// Instance normalization: a row's scale and bias are its channel's (row % channels).
__global__ void instance_norm_rows(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t channels,
                                   float eps) {
  __shared__ double shared[kRowThreads];
  const int64_t off = int64_t(blockIdx.x) * n;
  float mean, rstd;
  row_moments(x + off, n, eps, shared, mean, rstd);
  const float s = scale[blockIdx.x % channels], b = bias[blockIdx.x % channels];
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) y[off + k] = (x[off + k] - mean) * rstd * s + b;
}

__global__ void instance_norm_grad_rows(const float* dy, const float* x, const float* scale, float* dx, int64_t n,
                                        int64_t channels, float eps) {
  __shared__ double shared[kRowThreads];
  const int64_t off = int64_t(blockIdx.x) * n;
  float mean, rstd;
  row_moments(x + off, n, eps, shared, mean, rstd);
  const float s = scale[blockIdx.x % channels];
  double g_sum = 0.0, gx_sum = 0.0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const double g = double(dy[off + k]) * s;
    g_sum += g;
    gx_sum += g * double((x[off + k] - mean) * rstd);
  }
  g_sum = block_reduce(g_sum, shared, SumD{});
  gx_sum = block_reduce(gx_sum, shared, SumD{});
  const float g_mean = float(g_sum / double(n)), gx_mean = float(gx_sum / double(n));
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const float xhat = (x[off + k] - mean) * rstd;
    dx[off + k] = rstd * (dy[off + k] * s - g_mean - xhat * gx_mean);
  }
}

// One block per channel: its rows in order, each row's sum of dy xhat reduced over the block.
__global__ void instance_norm_scale_grad_channels(const float* dy, const float* x, float* ds, int64_t rows, int64_t n,
                                                  int64_t channels, float eps) {
  __shared__ double shared[kRowThreads];
  double total = 0.0;
  for (int64_t r = blockIdx.x; r < rows; r += channels) {
    float mean, rstd;
    row_moments(x + r * n, n, eps, shared, mean, rstd);
    double sum = 0.0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += double(dy[r * n + k]) * double((x[r * n + k] - mean) * rstd);
    total += block_reduce(sum, shared, SumD{});
  }
  if (threadIdx.x == 0) ds[blockIdx.x] = float(total);
}

}  // namespace

void launch_instance_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t n,
                          int64_t channels, float eps, cudaStream_t stream) {
  if (rows > 0 && n > 0) instance_norm_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(x, scale, bias, y, n, channels, eps);
}

void launch_instance_norm_grad(const float* dy, const float* x, const float* scale, float* dx, int64_t rows, int64_t n,
                               int64_t channels, float eps, cudaStream_t stream) {
  if (rows > 0 && n > 0) instance_norm_grad_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(dy, x, scale, dx, n, channels, eps);
}

void launch_instance_norm_scale_grad(const float* dy, const float* x, float* dscale, int64_t rows, int64_t n, int64_t channels,
                                     float eps, cudaStream_t stream) {
  if (channels > 0) instance_norm_scale_grad_channels<<<unsigned(channels), kRowThreads, 0, stream>>>(dy, x, dscale, rows, n, channels, eps);
}

void launch_layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t n,
                       float eps, cudaStream_t stream) {
  if (rows > 0 && n > 0) layer_norm_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(x, scale, bias, y, n, eps);
}

void launch_layer_norm_grad(const float* dy, const float* x, const float* scale, float* dx, int64_t rows, int64_t n,
                            float eps, cudaStream_t stream) {
  if (rows > 0 && n > 0) layer_norm_grad_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(dy, x, scale, dx, n, eps);
}

void launch_layer_norm_scale_grad(const float* dy, const float* x, float* moments, float* dscale, int64_t rows,
                                  int64_t n, float eps, cudaStream_t stream) {
  if (n <= 0) return;
  if (rows > 0) moments_rows<<<unsigned(rows), kRowThreads, 0, stream>>>(x, moments, n, eps);
  scale_grad_columns<<<blocks_for(n), kThreads, 0, stream>>>(dy, x, moments, dscale, rows, n);
}

}  // namespace of::kernels::cuda
