// SPDX-License-Identifier: Apache-2.0
// The batch norm family on the GPU (the CPU twins: kernels/cpu/batch_norm.cpp and
// batch_norm_train.cpp): per channel, two passes over its n * inner values for the statistics
// (mean, then squared deviations: no cancellation when |mean| >> std), sums in double.
#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

// Element j of channel ch's n * inner values.
__device__ inline int64_t channel_offset(int64_t j, int64_t ch, int64_t c, int64_t inner) {
  return (j / inner) * c * inner + ch * inner + j % inner;
}

__global__ void stats_kernel(const float* x, int64_t n, int64_t c, int64_t inner, double epsilon, float* mean_out, float* invstd_out,
                             float* var_out) {
  __shared__ double shared[kRowThreads];
  const int64_t ch = blockIdx.x, m = n * inner;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) sum += x[channel_offset(j, ch, c, inner)];
  const double mean = block_reduce(sum, shared, SumD{}) / double(m);
  double sq = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double d = x[channel_offset(j, ch, c, inner)] - mean;
    sq += d * d;
  }
  const double var = block_reduce(sq, shared, SumD{}) / double(m);
  if (threadIdx.x == 0) {
    mean_out[ch] = float(mean);
    invstd_out[ch] = float(1.0 / sqrt(var + epsilon));
    var_out[ch] = float(var * double(m) / double(m - 1));
  }
}

__global__ void apply_kernel(const float* x, const float* scale, const float* bias, const float* mean, const float* invstd, float* y,
                             int64_t total, int64_t c, int64_t inner, bool relu) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t ch = (i / inner) % c;
    const float a = invstd[ch] * scale[ch];
    const float v = (x[i] - mean[ch]) * a + bias[ch];
    y[i] = relu ? (v < 0.0f ? 0.0f : v) : v;  // std::max(v, 0): a NaN stays NaN
  }
}

__global__ void infer_kernel(const float* x, const float* scale, const float* bias, const float* mean, const float* var, float epsilon,
                             float* y, int64_t total, int64_t c, int64_t inner) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t ch = (i / inner) % c;
    const float a = scale[ch] / sqrtf(var[ch] + epsilon);
    const float b = bias[ch] - mean[ch] * a;
    y[i] = a * x[i] + b;
  }
}

// dx = scale * invstd / m * (m dy - sum(dy) - xhat sum(dy xhat)), as PyTorch's batch_norm_backward.
__global__ void train_grad_kernel(const float* dy, const float* x, const float* scale, const float* saved_mean, const float* saved_invstd,
                                  float* dx, float* dscale, float* dbias, int64_t n, int64_t c, int64_t inner) {
  __shared__ double shared[kRowThreads];
  const int64_t ch = blockIdx.x, m = n * inner;
  const double mean = saved_mean[ch], invstd = saved_invstd[ch];
  double s_dy = 0, s_dy_xhat = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const int64_t o = channel_offset(j, ch, c, inner);
    s_dy += dy[o];
    s_dy_xhat += dy[o] * ((x[o] - mean) * invstd);
  }
  const double sum_dy = block_reduce(s_dy, shared, SumD{});
  const double sum_dy_xhat = block_reduce(s_dy_xhat, shared, SumD{});
  const double k = scale[ch] * invstd / double(m);
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const int64_t o = channel_offset(j, ch, c, inner);
    const double xhat = (x[o] - mean) * invstd;
    dx[o] = float(k * (double(m) * dy[o] - sum_dy - xhat * sum_dy_xhat));
  }
  if (threadIdx.x == 0) {
    dbias[ch] = float(sum_dy);
    dscale[ch] = float(sum_dy_xhat);
  }
}

// The count is read here and incremented by count_kernel after it: in place, a block that wrote
// it here could run before another block read it. Each call of the module blends in turn, the
// running values stored as float between calls (the CPU twin's order).
__global__ void stats_update_kernel(BatchNormCallStats calls, const float* rm, const float* rv, const int64_t* count, float* rm_out,
                                    float* rv_out, int64_t c, double momentum, bool cumulative) {
  for (int64_t ch = first_index(); ch < c; ch += grid_stride()) {
    float m = rm[ch], v = rv[ch];
    for (int k = 0; k < calls.count; ++k) {
      const int64_t before = count[0] > INT64_MAX - k ? INT64_MAX : count[0] + k;
      const double f = cumulative ? 1.0 / (double(before) + 1.0) : momentum;  // BatchNormStatsUpdateGeometry::factor
      m = float(f * calls.mean[k][ch] + (1 - f) * double(m));
      v = float(f * calls.var[k][ch] + (1 - f) * double(v));
    }
    rm_out[ch] = m;
    rv_out[ch] = v;
  }
}

__global__ void count_kernel(const int64_t* count, int64_t* count_out, int64_t calls) {
  const int64_t k = count[0];
  count_out[0] = k > INT64_MAX - calls ? INT64_MAX : k + calls;  // a hostile checkpoint's count saturates
}

}  // namespace

void launch_batch_norm_stats(const float* x, int64_t n, int64_t c, int64_t inner, double epsilon, float* mean, float* invstd,
                             float* unbiased_var, cudaStream_t stream) {
  if (c > 0) stats_kernel<<<unsigned(c), kRowThreads, 0, stream>>>(x, n, c, inner, epsilon, mean, invstd, unbiased_var);
}

void launch_batch_norm_apply(const float* x, const float* scale, const float* bias, const float* mean, const float* invstd, float* y,
                             int64_t n, int64_t c, int64_t inner, bool relu, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  if (total > 0) apply_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, scale, bias, mean, invstd, y, total, c, inner, relu);
}

void launch_batch_norm_infer(const float* x, const float* scale, const float* bias, const float* mean, const float* var, float epsilon,
                             float* y, int64_t n, int64_t c, int64_t inner, cudaStream_t stream) {
  const int64_t total = n * c * inner;
  if (total > 0) infer_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, scale, bias, mean, var, epsilon, y, total, c, inner);
}

void launch_batch_norm_train_grad(const float* dy, const float* x, const float* scale, const float* mean, const float* invstd, float* dx,
                                  float* dscale, float* dbias, int64_t n, int64_t c, int64_t inner, cudaStream_t stream) {
  if (c > 0) train_grad_kernel<<<unsigned(c), kRowThreads, 0, stream>>>(dy, x, scale, mean, invstd, dx, dscale, dbias, n, c, inner);
}

void launch_batch_norm_stats_update(const BatchNormCallStats& calls, const float* running_mean, const float* running_var,
                                    const int64_t* count, float* running_mean_out, float* running_var_out, int64_t* count_out, int64_t c,
                                    double momentum, bool cumulative, cudaStream_t stream) {
  stats_update_kernel<<<blocks_for(c > 0 ? c : 1), kThreads, 0, stream>>>(calls, running_mean, running_var, count, running_mean_out,
                                                                        running_var_out, c, momentum, cumulative);
  count_kernel<<<1, 1, 0, stream>>>(count, count_out, calls.count);
}

}  // namespace of::kernels::cuda
