// SPDX-License-Identifier: Apache-2.0
// softmax_cross_entropy and its gradient on the GPU (the CPU twin: kernels/cpu/losses.cpp). One
// block per row for the softmax; the mean loss is a second, one-block kernel summing the rows'
// losses in double in a fixed order, so the loss is the same bits on every run.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

// prob may alias x: every thread reads its x[k] before writing prob[k], and the label's logit is
// read (after the max) before any prob is written.
__device__ bool counted_label(int64_t label, int64_t c, int64_t ignore) { return label != ignore && label >= 0 && label < c; }

// What a row weighs in the loss and its mean: 0 uncounted, else its label's class weight (1 without).
__device__ double row_weight(int64_t label, int64_t c, const XentRule& rule) {
  return !counted_label(label, c, rule.ignore) ? 0.0 : rule.weights ? double(rule.weights[label]) : 1.0;
}

__global__ void softmax_xent_rows(const float* x, const int64_t* labels, float* prob, double* row_loss, int64_t c, XentRule rule) {
  const float smoothing = rule.smoothing;
  __shared__ float shared[kRowThreads];
  __shared__ float picked;
  const int64_t r = blockIdx.x;
  const float* xr = x + r * c;
  float* pr = prob + r * c;
  float m = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) m = fmaxf(m, xr[k]);
  m = block_reduce(m, shared, MaxOp{});
  const int64_t label = labels[r];
  const bool counted = counted_label(label, c, rule.ignore);
  if (threadIdx.x == 0) picked = counted ? xr[label] - m : 0.0f;
  __syncthreads();
  float mean_x = 0.0f;  // of the shifted logits, for label smoothing: read before prob is written
  if (smoothing > 0.0f) {
    for (int64_t k = threadIdx.x; k < c; k += blockDim.x) mean_x += xr[k];
    mean_x = block_reduce(mean_x, shared, SumF{}) / float(c) - m;
  }
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
    const float e = expf(xr[k] - m);
    pr[k] = e;
    sum += e;
  }
  sum = block_reduce(sum, shared, SumF{});
  const float inv = 1.0f / sum;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) pr[k] *= inv;
  if (threadIdx.x == 0) {
    const float lse = logf(sum);
    double l = double(lse - picked);
    if (smoothing > 0.0f) l = (1.0 - double(smoothing)) * l + double(smoothing) * double(lse - mean_x);
    row_loss[r] = counted ? (rule.weights ? row_weight(label, c, rule) * l : l) : 0.0;
  }
}

// The counted rows' weights (their number without class weights): the mean's divisor is that / scale.
__device__ double counted_weight(const int64_t* labels, int64_t n, int64_t c, const XentRule& rule, double* shared) {
  double w = 0.0;
  for (int64_t r = threadIdx.x; r < n; r += blockDim.x) w += row_weight(labels[r], c, rule);
  return block_reduce(w, shared, SumD{});
}

__global__ void reduce_loss(const double* row_loss, const int64_t* labels, int64_t n, int64_t c, XentRule rule, float* loss) {
  __shared__ double shared[kRowThreads];
  double s = 0.0;
  for (int64_t r = threadIdx.x; r < n; r += blockDim.x) s += row_loss[r];
  s = block_reduce(s, shared, SumD{});
  const double w = counted_weight(labels, n, c, rule, shared);
  if (threadIdx.x == 0) *loss = n <= 0 ? 0.0f : rule.sum ? float(s) : float(s / (w / double(rule.scale)));
}

__global__ void loss_divisor(const int64_t* labels, int64_t n, int64_t c, XentRule rule, float* denom) {
  __shared__ double shared[kRowThreads];
  const double w = counted_weight(labels, n, c, rule, shared);
  if (threadIdx.x == 0) *denom = rule.sum ? 1.0f : float((w > 0.0 ? w : 1.0) / double(rule.scale));
}

__global__ void softmax_xent_grad(const float* dloss, const float* prob, const int64_t* labels, float* dx,
                                  int64_t n, int64_t c, const float* denom, XentRule rule) {
  const float scale = *dloss / *denom;
  const float uniform = rule.smoothing / float(c) * scale, on_label = (1.0f - rule.smoothing) * scale;
  const int64_t total = n * c;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t r = i / c, k = i % c;
    const int64_t label = labels[r];
    if (!counted_label(label, c, rule.ignore)) {
      dx[i] = 0.0f;
      continue;
    }
    if (rule.weights) {  // (no smoothing with weights: the host refuses it)
      const float s = scale * rule.weights[label];
      const float d = prob[i] * s;
      dx[i] = k == label ? d - s : d;
      continue;
    }
    const float d = prob[i] * scale - uniform;
    dx[i] = k == label ? d - on_label : d;
  }
}

}  // namespace

void launch_softmax_xent(const float* x, const int64_t* labels, float* prob, double* row_loss, float* loss, int64_t n,
                         int64_t c, const XentRule& rule, cudaStream_t stream) {
  if (n > 0 && c > 0) softmax_xent_rows<<<unsigned(n), kRowThreads, 0, stream>>>(x, labels, prob, row_loss, c, rule);
  reduce_loss<<<1, kRowThreads, 0, stream>>>(row_loss, labels, c > 0 ? n : 0, c, rule, loss);
}

void launch_softmax_xent_grad(const float* dloss, const float* prob, const int64_t* labels, float* dx, int64_t n,
                              int64_t c, const XentRule& rule, float* denom, cudaStream_t stream) {
  const int64_t total = n * c;
  if (total <= 0) return;
  loss_divisor<<<1, kRowThreads, 0, stream>>>(labels, n, c, rule, denom);
  softmax_xent_grad<<<blocks_for(total), kThreads, 0, stream>>>(dloss, prob, labels, dx, n, c, denom, rule);
}

namespace {

// One thread per row, the CPU twin's loop as it is (evaluation only: rows are few, and the first
// maximum with NaN above all is then plainly torch.argmax's).
__global__ void classify_metrics_rows(const float* x, const int64_t* labels, float* nll, float* correct, float* counted,
                                      int64_t n, int64_t c, int64_t ignore) {
  for (int64_t r = first_index(); r < n; r += grid_stride()) {
    const float* xr = x + r * c;
    int64_t best = 0;
    for (int64_t k = 1; k < c && !isnan(xr[best]); ++k)
      if (isnan(xr[k]) || xr[k] > xr[best]) best = k;
    const float m = c > 0 ? xr[best] : 0.0f;
    float sum = 0.0f;
    for (int64_t k = 0; k < c; ++k) sum += expf(xr[k] - m);
    const int64_t label = labels[r];
    const bool valid = counted_label(label, c, ignore);
    nll[r] = valid ? logf(sum) - (xr[label] - m) : 0.0f;
    correct[r] = valid && best == label ? 1.0f : 0.0f;
    counted[r] = valid ? 1.0f : 0.0f;
  }
}

}  // namespace

void launch_classify_metrics(const float* x, const int64_t* labels, float* nll, float* correct, float* counted, int64_t n,
                             int64_t c, int64_t ignore, cudaStream_t stream) {
  if (n <= 0) return;
  classify_metrics_rows<<<blocks_for(n), kThreads, 0, stream>>>(x, labels, nll, correct, counted, n, c, ignore);
}

namespace {

__global__ void mse_loss_block(const float* p, const float* t, float* loss, int64_t n, double denom) {
  __shared__ double shared[kRowThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double d = double(p[i]) - t[i];
    sum += d * d;
  }
  sum = block_reduce(sum, shared, SumD{});
  if (threadIdx.x == 0) *loss = float(n > 0 ? sum / denom : 0.0);
}

__global__ void mse_loss_grad_kernel(const float* dloss, const float* p, const float* t, float* dp, int64_t n, float denom_f) {
  const float scale = 2.0f * *dloss / denom_f;
  for (int64_t i = first_index(); i < n; i += grid_stride()) dp[i] = (p[i] - t[i]) * scale;
}

}  // namespace

void launch_mse_loss(const float* p, const float* t, float* loss, int64_t n, double denom, cudaStream_t stream) {
  mse_loss_block<<<1, kRowThreads, 0, stream>>>(p, t, loss, n, denom);
}

void launch_mse_loss_grad(const float* dloss, const float* p, const float* t, float* dp, int64_t n, float denom_f, cudaStream_t stream) {
  if (n > 0) mse_loss_grad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dloss, p, t, dp, n, denom_f);
}

}  // namespace of::kernels::cuda
