// SPDX-License-Identifier: Apache-2.0
// The launchers of the CUDA kernels (*.cu): plain pointers, sizes and a stream, no CUDA types,
// so the kernel classes (*.cpp, compiled by the host compiler) validate configs and call these.
// Every pointer is device memory; every launcher only enqueues work on `stream`.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/batch_norm_calls.h"
#include "kernels/elements_space.h"
#include "kernels/pad_space.h"
#include "kernels/reduce_max_space.h"
#include "kernels/random_draw.h"
#include "kernels/resize_space.h"
#include "kernels/topk_space.h"
#include "kernels/pointwise_ops.h"

namespace of::kernels::cuda {

inline constexpr int kMaxRank = 8;
// The row kernels (softmax, layer norm, cross-entropy) run one block per row: a grid's x limit.
inline constexpr int64_t kMaxRows = 2147483647;

// Element-wise ops of one tensor: y = op(x); grads dx = op(dy, t), t the forward output (the
// forward input for gelu, whose gradient reads x).
enum class UnaryOp : int8_t { relu, sigmoid, tanh, gelu };
enum class UnaryGradOp : int8_t { relu, sigmoid, tanh, gelu };
void launch_unary(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream);
void launch_unary_grad(UnaryGradOp op, const float* dy, const float* t, float* dx, int64_t n,
                       cudaStream_t stream);

// y = op(a, b) over an iteration space of `rank` dims (outermost first) with per-operand element
// strides (0 along broadcast axes); y is dense.
enum class BinaryOp : int8_t { add, sub, mul, div, max, min, prelu, pow, mod, fmod };
struct BroadcastSpace {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, a_strides[kMaxRank] = {}, b_strides[kMaxRank] = {};
  int64_t total = 0;
};
// int64 add, sub or mul (wrapping on overflow), mod or fmod (the CPU twin's remainders).
void launch_int_binary(BinaryOp op, const BroadcastSpace& space, const int64_t* a, const int64_t* b, int64_t* y, cudaStream_t stream);
void launch_binary(BinaryOp op, const BroadcastSpace& space, const float* a, const float* b, float* y,
                   cudaStream_t stream);

// Comparisons of two broadcast operands (f32 or i64) and logical and/or (bool bytes), into bool
// bytes (0 or 1): the CPU twin's rules (kernels/cpu/elementwise_binary.cpp).
enum class CompareOp : int8_t { greater, greater_or_equal, less, less_or_equal, equal, logical_and, logical_or };
enum class ElemType : int8_t { f32, i64, u8 };
void launch_compare(CompareOp op, ElemType in, const BroadcastSpace& space, const void* a, const void* b, uint8_t* y,
                    cudaStream_t stream);
// cast between f32, i64 and bool bytes (to bool: x != 0), and logical_not of bool bytes.
void launch_cast(ElemType from, ElemType to, const void* x, void* y, int64_t n, cudaStream_t stream);
void launch_logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream);
// y = min(max(x, lo), hi) over n int64 elements.
void launch_clip_int(const int64_t* x, int64_t* y, int64_t n, int64_t lo, int64_t hi, cudaStream_t stream);

// where: y = cond ? a : b over `rank` output dims with per-operand element strides (0 along
// broadcast axes); cond is bytes (nonzero = true).
struct WhereSpace {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, strides[3][kMaxRank] = {};  // cond, a, b
  int64_t total = 0;
};
void launch_where(const WhereSpace& space, const uint8_t* cond, const float* a, const float* b, float* y,
                  cudaStream_t stream);

// y[i, j] = beta * c[i * row_stride + j * col_stride] over [m, n] (gemm's C, broadcast).
void launch_fill_broadcast(const float* c, int64_t row_stride, int64_t col_stride, float beta, float* y,
                           int64_t m, int64_t n, cudaStream_t stream);
void launch_fill(float* y, float value, int64_t n, cudaStream_t stream);

// reduce_sum: the input as `rank` merged dims (outermost first), each either kept or reduced;
// y (dense over the kept dims, in order) = sum over the reduced ones / divisor; l2: the square
// root of the sum of squares (reduce_l2).
inline constexpr int kMaxReduceRuns = 16;  // alternating runs of kept and reduced dims
struct ReduceSpace {
  int rank = 0;
  int64_t dims[kMaxReduceRuns] = {};
  bool reduced[kMaxReduceRuns] = {};
  int64_t out_n = 0, reduce_n = 0;
};
void launch_reduce_sum(const ReduceSpace& space, const float* x, float* y, float divisor, bool l2, cudaStream_t stream);

// What softmax_cross_entropy's rows count for (kernels/rules.h): the mean's `scale`, label
// smoothing, the ignored label, a sum instead of a mean; weights: the class weights [c] on the
// device, or null (every counted row weighs 1).
struct XentRule {
  float scale = 1, smoothing = 0;
  int64_t ignore = 0;
  bool sum = false;
  const float* weights = nullptr;
};
// softmax_cross_entropy over [n, c]: prob = softmax(x) per row (may alias x), row_loss[r] the
// row's weight times its -log softmax[label], mixed with smoothing * the mean of -log softmax
// (0 for a label that is `ignore` or outside [0, c)), then loss = sum(row_loss), divided for a
// mean by (the counted rows' weights / scale).
void launch_softmax_xent(const float* x, const int64_t* labels, float* prob, double* row_loss, float* loss,
                         int64_t n, int64_t c, const XentRule& rule, cudaStream_t stream);
// dx = (prob - (1 - smoothing) * onehot(label) - smoothing / c) * row weight * *dloss / the
// loss's divisor; zero rows where the label does not count. `denom` is one float
// of device scratch.
void launch_softmax_xent_grad(const float* dloss, const float* prob, const int64_t* labels, float* dx,
                              int64_t n, int64_t c, const XentRule& rule, float* denom, cudaStream_t stream);

// Optimizers: torch.optim's rules as kernels/cpu/optimizers.cpp states them; lr and step are
// device scalars (inputs of the task), read by every thread. Outputs may alias their inputs.
struct SgdParams {
  float momentum = 0, keep = 1, weight_decay = 0;
  bool nesterov = false;
};
void launch_sgd_update(const SgdParams& p, const float* param, const float* grad, const float* buf,
                       const float* lr, const float* step, float* param_out, float* buf_out, int64_t n,
                       cudaStream_t stream);
struct AdamParams {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0;
  bool decoupled = false, amsgrad = false;
};
// vmax and vmax_out (amsgrad's largest v) are null without amsgrad.
void launch_adam_update(const AdamParams& p, const float* param, const float* grad, const float* m, const float* v, const float* vmax,
                        const float* lr, const float* step, float* param_out, float* m_out, float* v_out, float* vmax_out, int64_t n,
                        cudaStream_t stream);

struct RmspropParams {
  float alpha = 0.99f, eps = 1e-8f, weight_decay = 0, momentum = 0;
  bool centered = false;
};
// buf and grad_avg (and their outputs) are null where torch keeps none (momentum 0, not centered).
void launch_rmsprop_update(const RmspropParams& p, const float* param, const float* grad, const float* sq, const float* buf,
                           const float* ga, const float* lr, const float* step, float* param_out, float* sq_out, float* buf_out,
                           float* ga_out, int64_t n, cudaStream_t stream);
struct AdagradParams {
  float lr_decay = 0, eps = 1e-10f, weight_decay = 0;
};
void launch_adagrad_update(const AdagradParams& p, const float* param, const float* grad, const float* sum, const float* lr,
                           const float* step, float* param_out, float* sum_out, int64_t n, cudaStream_t stream);

// accumulate's element-wise steps: acc += g; acc *= scale.
void launch_add_inplace(float* acc, const float* g, int64_t n, cudaStream_t stream);
void launch_scale_inplace(float* acc, float scale, int64_t n, cudaStream_t stream);

// softmax / log_softmax along one axis of a tensor viewed as [outer, n, inner]; y may alias x.
void launch_softmax(bool log, const float* x, float* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream);
// masked_softmax and its gradient (kernels/rules.h): `rows` rows of n, cond's row r % cond_rows
// for row r.
void launch_masked_softmax(const float* x, const uint8_t* cond, bool masked, float* y, int64_t rows, int64_t n, int64_t cond_rows,
                           cudaStream_t stream);
void launch_masked_softmax_grad(const float* dy, const float* y, const uint8_t* cond, bool masked, float* dx, int64_t rows, int64_t n,
                                int64_t cond_rows, cudaStream_t stream);
// Their gradients from (dy, y): softmax dx = y*(dy - sum(dy*y)); log_softmax dx = dy - exp(y)*sum(dy).
void launch_softmax_grad(bool log, const float* dy, const float* y, float* dx, int64_t outer, int64_t n, int64_t inner,
                         cudaStream_t stream);

// gather: y [outer, count, row] from table [outer, vocab, row] at indices (int64 when wide, else
// int32; negative ones count from the end; out of range gives a zero row). gather_grad: dtable
// (zeroed first) += dy rows at their indices, added in index order per element, as the CPU twin;
// row `padding` (>= 0: nn.Embedding's padding_idx) stays zero.
void launch_gather(const float* table, const void* indices, bool wide, float* y, int64_t outer, int64_t vocab,
                   int64_t row, int64_t count, cudaStream_t stream);
void launch_gather_grad(const float* dy, const void* indices, bool wide, float* dtable, int64_t outer, int64_t vocab,
                        int64_t row, int64_t count, int64_t padding, cudaStream_t stream);

// Layer normalization over rows of n (the CPU twin: kernels/cpu/layer_norm.cpp), each row's
// moments summed in double: y = (x - mean) * rstd * scale + bias (bias may be null);
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale; and the scale's gradient,
// sum over rows of dy * xhat, from the rows' moments kept in `moments` (2 floats a row).
void launch_layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t n,
                       float eps, cudaStream_t stream);
void launch_layer_norm_grad(const float* dy, const float* x, const float* scale, float* dx, int64_t rows, int64_t n,
                            float eps, cudaStream_t stream);
void launch_layer_norm_scale_grad(const float* dy, const float* x, float* moments, float* dscale, int64_t rows,
                                  int64_t n, float eps, cudaStream_t stream);
// Instance normalization (the CPU twin: kernels/cpu/layer_norm.cpp): rows of n, row r's scale and
// bias those of channel r % channels; the scale's gradient one block per channel, rows in order.
void launch_instance_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t n,
                          int64_t channels, float eps, cudaStream_t stream);
void launch_instance_norm_grad(const float* dy, const float* x, const float* scale, float* dx, int64_t rows, int64_t n,
                               int64_t channels, float eps, cudaStream_t stream);
void launch_instance_norm_scale_grad(const float* dy, const float* x, float* dscale, int64_t rows, int64_t n, int64_t channels,
                                     float eps, cudaStream_t stream);

// Convolution blocks (one batch element, one group: `channels` = C/g input volumes of d x h x w;
// a 2-D convolution has depth 1): im2col writes col [channels*kd*kh*kw, od*oh*ow] (zeros where a
// tap reads padding); col2im writes each input element as the sum of the column entries read
// from it (a gather: no atomics, fixed order).
struct ConvBlock {
  int64_t channels = 0, d = 1, h = 0, w = 0, kd = 1, kh = 1, kw = 1, od = 1, oh = 0, ow = 0;
  int64_t stride_d = 1, stride_h = 1, stride_w = 1, pad_f = 0, pad_t = 0, pad_l = 0, dil_d = 1, dil_h = 1, dil_w = 1;
};
void launch_im2col(const ConvBlock& b, const float* x, float* col, cudaStream_t stream);
void launch_col2im(const ConvBlock& b, const float* col, float* x, cudaStream_t stream);
// y[r, :] = values[r] over `rows` rows of `cols` (a conv's bias, per output channel).
void launch_fill_rows(const float* values, float* y, int64_t rows, int64_t cols, cudaStream_t stream);

// max_pool (2-D, NCHW planes of h x w): y = the max over each window's in-bounds taps, a NaN
// winning (a window all in the padding gives -inf); max_pool_grad: each window's first maximum in
// row-major tap order (a later NaN taking it, as PyTorch) kept in `argmax`, then dx per input
// element as the sum of the dy whose window chose it (a gather: no atomics).
struct PoolGeometry {
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1, pad_t = 0, pad_l = 0, dil_h = 1, dil_w = 1;
  int64_t pad_b = 0, pad_r = 0;
};
void launch_max_pool(const PoolGeometry& p, const float* x, float* y, cudaStream_t stream);
void launch_max_pool_grad(const PoolGeometry& p, const float* dy, const float* x, int64_t* argmax, float* dx,
                          cudaStream_t stream);

// average_pool (no dilation): each output the float sum of its window's taps inside the input, in
// the CPU twin's order, over their count (or, count_include_pad, the window clipped to the padded
// input); its gradient gathers, per input element, each window's share in window order: both
// the CPU twin's bits.
void launch_average_pool(const PoolGeometry& p, bool include_pad, const float* x, float* y, cudaStream_t stream);
void launch_average_pool_grad(const PoolGeometry& p, bool include_pad, const float* dy, float* dx, cudaStream_t stream);

// transpose: y (dense over `rank` collapsed output dims) from x at the given input strides, for
// elements of elem_size bytes (1, 2, 4 or 8).
struct TransposeSpace {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, in_strides[kMaxRank] = {};
  int64_t total = 0;
};
void launch_transpose(const TransposeSpace& space, int64_t elem_size, const void* x, void* y, cudaStream_t stream);

// strided_slice's gradient: dx (zeroed first, dx_elements of them) gets dy's elements at the
// offsets `space` (dy's dims, dx's strides) gives, from dx + offset. The forward pass is
// launch_transpose from x + offset.
void launch_strided_scatter(const TransposeSpace& space, int64_t offset, const float* dy, float* dx, int64_t dx_elements,
                            cudaStream_t stream);

// reduce_max (kernels/reduce_max_space.h): one thread per output element; its gradient zeroes dX
// (x_n elements) and puts each dY at its output's first maximum.
void launch_reduce_max(const ReduceMaxSpace& space, const float* x, float* y, cudaStream_t stream);
void launch_argmax(const ReduceMaxSpace& space, const float* x, int64_t* y, bool last, cudaStream_t stream);
void launch_reduce_max_grad(const ReduceMaxSpace& space, const float* dy, const float* x, const float* y, float* dx, int64_t x_n,
                            cudaStream_t stream);

// resize (kernels/resize_space.h): one thread per element of Y; resize_grad one per plane.
void launch_resize(const ResizeSpace& space, const float* x, float* y, cudaStream_t stream);
void launch_resize_grad(const ResizeSpace& space, const float* dy, float* dx, cudaStream_t stream);

// pad (kernels/pad_space.h): one thread per element of Y; pad_grad one per element of dX, each
// summing what reads it in the CPU kernel's order.
void launch_pad(const PadSpace& space, const float* x, float* y, cudaStream_t stream);
void launch_pad_grad(const PadSpace& space, const float* dy, float* dx, cudaStream_t stream);

// The pointwise ops of kernels/pointwise_ops.h (the CPU kernels' own definitions) over n floats:
// y = op(x); dx = op(dy, x), x the forward input. dx may alias dy or x. Instantiated for each op
// in pointwise_math.cu.
template <class Op>
void launch_map(const Op& op, const float* x, float* y, int64_t n, cudaStream_t stream);
template <class Op>
void launch_map_grad(const Op& op, const float* dy, const float* x, float* dx, int64_t n, cudaStream_t stream);

// The batch norm family over X seen as [n, c, inner] (kernels/rules.h, ChannelView), the CPU
// twins' math: statistics and the gradient one block per channel (sums in double over a fixed
// tree: the same bits every run), the normalisations one thread per element.
void launch_batch_norm_stats(const float* x, int64_t n, int64_t c, int64_t inner, double epsilon, float* mean, float* invstd,
                             float* unbiased_var, cudaStream_t stream);
void launch_batch_norm_apply(const float* x, const float* scale, const float* bias, const float* mean, const float* invstd, float* y,
                             int64_t n, int64_t c, int64_t inner, bool relu, cudaStream_t stream);
void launch_batch_norm_infer(const float* x, const float* scale, const float* bias, const float* mean, const float* var, float epsilon,
                             float* y, int64_t n, int64_t c, int64_t inner, cudaStream_t stream);
void launch_batch_norm_train_grad(const float* dy, const float* x, const float* scale, const float* mean, const float* invstd, float* dx,
                                  float* dscale, float* dbias, int64_t n, int64_t c, int64_t inner, cudaStream_t stream);
// The batch statistics of each call of one BatchNorm module in a step (kernel argument: by value).
struct BatchNormCallStats {
  const float* mean[kMaxBatchNormCalls];
  const float* var[kMaxBatchNormCalls];
  int count = 0;
};
void launch_batch_norm_stats_update(const BatchNormCallStats& calls, const float* running_mean, const float* running_var,
                                    const int64_t* count, float* running_mean_out, float* running_var_out, int64_t* count_out, int64_t c,
                                    double momentum, bool cumulative, cudaStream_t stream);

// global_average_pool: y[p] = the mean of plane p's `spatial` values (a block per plane, the sum in
// double); its gradient: dx[p, i] = dy[p] / spatial.
void launch_global_average_pool(const float* x, float* y, int64_t planes, int64_t spatial, cudaStream_t stream);
void launch_global_average_pool_grad(const float* dy, float* dx, int64_t planes, int64_t spatial, cudaStream_t stream);

// dropout (and its gradient, the same on dY): y[i] = x[i] * scale where element offset + i of the
// whole tensor draws a kept 24-bit uniform from Philox (kernels/philox.h) under key (k0, k1) and
// the piece's counter, else 0: the CPU twin's mask, bit for bit.
void launch_dropout(const float* x, float* y, int64_t n, int64_t offset, uint32_t k0, uint32_t k1, uint64_t piece, uint32_t threshold,
                    float scale, cudaStream_t stream);

// mse_loss: *loss = sum((p - t)^2, in double, one block's fixed tree) / denom (0 when n is 0);
// its gradient: dp = (p - t) * (2 * *dloss / denom_f).
void launch_mse_loss(const float* p, const float* t, float* loss, int64_t n, double denom, cudaStream_t stream);
void launch_mse_loss_grad(const float* dloss, const float* p, const float* t, float* dp, int64_t n, float denom_f, cudaStream_t stream);

// collective_part's box: y[dst + i] = (or +=) x[src + i] over `rank` box dims with per-tensor
// element strides; elem_size 4 or 8 (only f32 boxes add). x may be another GPU's memory: the
// runtime enables peer access between the GPUs of a rank before any collective runs.
struct BoxSpace {
  int rank = 0;
  int64_t dims[kMaxRank] = {}, src_strides[kMaxRank] = {}, dst_strides[kMaxRank] = {};
  int64_t src = 0, dst = 0, total = 0;  // element offsets of the box's corner, its element count
};
void launch_box(const BoxSpace& space, int64_t elem_size, bool add, const void* x, void* y, cudaStream_t stream);

// classify_metrics: per row of x [n, c], nll = logsumexp(x) - x[label], correct = (the first
// maximum, NaN above all, is the label) and counted = 1; all 0 for a label that is `ignore` or
// outside [0, c).
void launch_classify_metrics(const float* x, const int64_t* labels, float* nll, float* correct, float* counted, int64_t n,
                             int64_t c, int64_t ignore, cudaStream_t stream);

// The recurrent kernels' element-wise steps (cuda/recurrent.cu; the math of kernels/recurrent_cells.h),
// one thread per element of [N, H], rows of G*H pre-activations or gates:
// y[r, j] += b1[j] + b2[j] (b2 null: += b1[j]) over [rows, cols];
void launch_add_bias_rows(float* y, const float* b1, const float* b2, int64_t rows, int64_t cols, cudaStream_t stream);
// y[r, j] = row[j] (row null: 0) over [rows, cols];
void launch_fill_rows(float* y, const float* row, int64_t rows, int64_t cols, cudaStream_t stream);
// LSTM: c (C_{t-1} in, C_t out), ht = H_t; gates and cells null unless training;
void launch_lstm_step(const float* a, float* c, float* ht, float* gates, float* cells, int64_t n, int64_t h, cudaStream_t stream);
// LSTM backward: dh = dh_carry + dy (dy null: 0); dc carried in place; da the step's rows;
void launch_lstm_step_grad(const float* gates, const float* ct, const float* cprev, const float* dy, const float* dh_carry, float* dc,
                           float* da, int64_t n, int64_t h, cudaStream_t stream);
// GRU: x and hr the step's input and hidden projections, hprev = H_{t-1}; gates and q null unless training;
void launch_gru_step(const float* x, const float* hr, const float* hprev, float* ht, float* gates, float* q, int64_t n, int64_t h,
                     cudaStream_t stream);
// GRU backward: dh (dL/dH_t's carry in, H_t's direct share of dL/dH_{t-1} out) + dy (null: 0);
void launch_gru_step_grad(const float* gates, const float* q, const float* hprev, const float* dy, float* dh, float* dax, float* dah,
                          int64_t n, int64_t h, cudaStream_t stream);
// RNN: ht = f(x + hr) (f relu or tanh) of the step's input and hidden projections;
void launch_rnn_step(const float* x, const float* hr, float* ht, int64_t n, int64_t h, bool relu, cudaStream_t stream);
// RNN backward: da = the pre-activation gradient of dh (dL/dH_t's carry) + dy (null: 0) at H_t = ht;
void launch_rnn_step_grad(const float* ht, const float* dy, const float* dh, float* da, int64_t n, int64_t h, bool relu,
                          cudaStream_t stream);
// db[j] = sum over rows of dax[r, j], db[cols + j] = the same of dah, each column summed in row
// order from 0 (the CPU twin's order: the same bits).
void launch_bias_grad(const float* dax, const float* dah, float* db, int64_t rows, int64_t cols, cudaStream_t stream);

// gather_elements: one thread per element of the indices. scatter_elements (y already holds
// data, or zeros for add_to_zeros): one thread per line along the axis, in the line's order, as
// the CPU twin goes (the same last write and the same sums); `updates` null for clear.
void launch_gather_elements(const ElementsSpace& s, const float* x, const void* indices, float* y, cudaStream_t stream);
void launch_scatter_elements(const ElementsSpace& s, ScatterMode mode, const void* indices, const float* updates, float* y,
                             cudaStream_t stream);

// topk and topk_grad (kernels/topk_space.h): one thread per row around the axis.
void launch_topk(const TopKSpace& s, const float* x, float* values, int64_t* indices, cudaStream_t stream);
void launch_topk_grad(const TopKSpace& s, const float* dy, const int64_t* indices, float* dx, cudaStream_t stream);

// random (kernels/random_draw.h): one thread per element.
void launch_random(const RandomGeometry& g, float* y, uint64_t piece, uint32_t k0, uint32_t k1, cudaStream_t stream);

}  // namespace of::kernels::cuda
