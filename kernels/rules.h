// SPDX-License-Identifier: Apache-2.0
// What a kernel's configuration must satisfy and what follows from it (sizes, strides, scalars),
// said once for the kernels that have twins on several devices (cpu/, cuda/): each factory calls
// the rule, then prepares its own loops or launches. Failures name the node, as cpu/check.h's do.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/batch_norm_calls.h"
#include "kernels/elements_space.h"
#include "kernels/cpu/check.h"
#include "kernels/kernel.h"
#include "kernels/pad_space.h"
#include "kernels/reduce_max_space.h"
#include "kernels/resize_space.h"
#include "kernels/random_draw.h"
#include "kernels/topk_space.h"

namespace of::kernels {

// gemm: Y[m,n] = alpha * op(A) * op(B) + beta * C, C unidirectionally broadcast to [m,n].
struct GemmGeometry {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1;  // row-major leading dimensions of A and B
  float alpha = 1, beta = 1;
  bool has_c = false;                              // a C input with beta != 0
  int64_t c_row_stride = 0, c_col_stride = 0;      // C's element strides (0 along broadcast axes)
  bool relu = false;                               // fused activation
};
GemmGeometry gemm_geometry(const KernelConfig& cfg);

// reduce_sum: sorted `axes` (absent: all), `keepdims`, `divisor`; the input as runs of adjacent
// kept or reduced dims (size-1 dims dropped), outermost first.
struct ReduceGeometry {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  int64_t in_n = 0, out_n = 0;
  float divisor = 1.0f;
};
ReduceGeometry reduce_geometry(const KernelConfig& cfg);

// reduce_max (X -> Y) and reduce_max_grad (dY, X, Y -> dX): `axes` and `keepdims` as reduce_sum's
// (kernels/reduce_max_space.h: the index math both devices share).
ReduceMaxSpace reduce_max_space(const KernelConfig& cfg, bool grad);
// argmax (X f32 -> Y i64, one axis in `axes`, keepdims; select_last_index): reduce_max's space.
ReduceMaxSpace argmax_space(const KernelConfig& cfg);
// topk (X -> values, int64 indices: `axis`'s k largest or smallest, attributes axis, k, largest)
// and, with `grad`, topk_grad (dY, indices -> dX of X's shape): the rows around the axis.
TopKSpace topk_space(const KernelConfig& cfg, bool grad);
// random (no input read, or one whose data it ignores -> Y f32): attributes normal (0 uniform,
// 1 normal), a and b (low and high, or mean and scale), stream.
RandomGeometry random_geometry(const KernelConfig& cfg);

// Optimizer updates: inputs (param, grad, states..., lr, step), outputs (param', states'...), or
// with attribute param_last 1 (states'..., param'): ZeRO 1/2 update the states in place but
// stream the new param shard on to be gathered into every replica, and a node's in-place outputs
// come first. All f32, the tensors of param's shape and lr, step scalars. Returns the element count.
int64_t update_layout(const KernelConfig& cfg, const char* name, const std::vector<const char*>& states);
// The states of adam_update (m, v, and with amsgrad the largest v) and rmsprop_update
// (square_avg, a momentum buffer with momentum > 0, grad_avg when centered), in input order:
// what the CPU kernels and their CUDA twins lay out (add-optimizer writes them in this order).
std::vector<const char*> adam_states(bool amsgrad);
std::vector<const char*> rmsprop_states(bool momentum, bool centered);
// Where param' and the first state' lie among an update's outputs (see update_layout).
struct UpdateOutputs {
  int param = 0, first_state = 1;
};
UpdateOutputs update_outputs(const KernelConfig& cfg);
// A float attribute that must be >= lo.
float float_attr_at_least(const KernelConfig& cfg, const char* name, const char* attr, float fallback, float lo);

// softmax_cross_entropy (and its grad, metrics): input `at` is [N,C] and input at + 1 the labels [N].
std::pair<int64_t, int64_t> xent_dims(const KernelConfig& cfg, const char* name, int at);
// The divisor of a loss's mean over n rows or elements: n / `scale` (a device holding 1/k of a
// split batch divides by N*k, so the k devices' losses sum to the whole batch's).
double loss_denominator(const KernelConfig& cfg, int64_t n);
// That `scale` (checked), for a loss whose rows are counted at run time: n / scale.
float loss_scale(const KernelConfig& cfg);
// softmax_cross_entropy and its grad: attribute `label_smoothing` (default 0), in [0, 1]: the
// target is 1 - E on the label plus E / C on every class, as torch's F.cross_entropy's.
float label_smoothing(const KernelConfig& cfg, const char* name);
// softmax_cross_entropy, its grad and classify_metrics: attribute `ignore_index` (default -100,
// torch's): a row whose label it is counts nowhere, neither in the loss nor in the mean's rows
// (nor does a label outside [0, C), which validated data never holds).
int64_t ignore_index(const KernelConfig& cfg);
// softmax_cross_entropy and its grad: attribute `sum` (default 0): 1 sums the rows' losses, as
// torch's reduction='sum' (no `scale`: the sums of a split batch's parts add up to the whole
// batch's, whatever splits it; DDP's ranks would average theirs).
bool loss_sums(const KernelConfig& cfg);
// softmax_cross_entropy (input 2) and its grad (input 3): optional class weights [C], f32, as
// torch's weight=: a counted row weighs its label's weight, in the sum and in the mean's divisor
// (the weights' sum over the rows in place of their count). Fails naming the kernel when they
// are not [C] or come with label smoothing (torch's formula for both is not the kernels').
bool class_weights(const KernelConfig& cfg, const char* name, size_t at, int64_t classes, float smoothing);
// The input dtypes `t` of a loss kernel, plus f32 when it is given class weights.
std::vector<DType> xent_input_dtypes(const KernelConfig& cfg, std::vector<DType> t);

// accumulate: (grad, lr, step) -> (mean grad, lr, step); returns micro_batches (k).
int64_t accumulate_micro_batches(const KernelConfig& cfg);

// copy: one input, one output of the same dtype and size; returns the bytes.
size_t copy_bytes(const KernelConfig& cfg);

// cast: one input, one output of its shape, between f32, i64 and bool (kernels/cast_value.h);
// logical_not: bool to bool of one shape. Return the element count.
int64_t cast_elements(const KernelConfig& cfg);
int64_t logical_not_elements(const KernelConfig& cfg);
// clip_int: int64 x clamped to [min, max] (int attributes; absent: no bound), as torch.clamp of a
// LongTensor (ids: `ids.clamp(max=V - 1)`); min above max gives max everywhere, as torch's.
struct ClipIntBounds {
  int64_t n = 0, lo = 0, hi = 0;
};
ClipIntBounds clip_int_bounds(const KernelConfig& cfg);

// Element-wise kernels of one f32 tensor: y = op(x); their gradients dx = op(dy, t), t of dy's
// shape (`second` names it in errors: "x" or "y"). Return the element count.
int64_t unary_count(const KernelConfig& cfg, const char* name);
int64_t unary_grad_count(const KernelConfig& cfg, const char* name, const char* second);

// softmax / log_softmax (x -> y) and their gradients ((dy, y) -> dx) along attribute `axis`:
// the tensor viewed as [outer, n, inner].
cpu::AxisView softmax_view(const KernelConfig& cfg, const char* name);
cpu::AxisView softmax_grad_view(const KernelConfig& cfg, const char* name);

// masked_softmax (x, cond) -> y: softmax along x's last axis after the positions where bool cond
// is `masked` (attribute, default 1: where cond is true; 0: where it is false) became -inf, as
// Where(cond, -inf, x) and then Softmax(axis -1) compute it (compiler/passes/
// fuse_masked_softmax.cpp fuses them: attention's causal mask). masked_softmax_grad (dy, y, cond)
// -> dx: softmax's gradient, +0 where masked, as Where's gradient gives it. cond's shape, leading
// 1s dropped, is x's last dims: x is `rows` rows of n, row r masked by cond's row r % cond_rows.
struct MaskedSoftmaxView {
  int64_t rows = 0, n = 0, cond_rows = 1;
  bool masked = true;
};
MaskedSoftmaxView masked_softmax_view(const KernelConfig& cfg, const char* name, bool grad);

// matmul (numpy semantics: 1-D operands promoted then squeezed, batch dims broadcast; attributes
// trans_a / trans_b, default 0: that operand, of rank >= 2, is read with its last two dims
// swapped, as autodiff's A^T dY and dY B^T read them, without a transpose of their own) and
// matmul_tb (A [..., M, K] times the transpose of B [N, K]): Y's batch t is the row-major product
// of A at a_offsets[t] ([m,k], or [k,m] when trans_a) and B at b_offsets[t] ([k,n], or [n,k]
// when trans_b), at t*m*n in Y. A shared B with a contiguous, untransposed A folds the batch into
// m (one product).
struct MatMulGeometry {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::vector<int64_t> a_offsets, b_offsets;  // in elements, one per batch
};
MatMulGeometry matmul_geometry(const KernelConfig& cfg);
MatMulGeometry matmul_tb_geometry(const KernelConfig& cfg);

// concat along `axis`, any dtype, any number of inputs: per each of `outer` rows, input k's
// contiguous block of block_bytes[k] follows the others in Y's row, then tail_bytes of zeros.
// Attribute `tail` (default 0): Y's last `tail` entries along the axis are zeros, no input's (a
// gradient bucket's padding to a size its devices split evenly; compiler/parallel/gradient_bucket.h).
struct ConcatGeometry {
  int64_t outer = 1;
  std::vector<size_t> block_bytes;
  size_t tail_bytes = 0;
};
ConcatGeometry concat_geometry(const KernelConfig& cfg);

// split along `axis` (required), any dtype: per each of `outer` rows of in_row bytes, output k
// takes row[k] bytes from offset[k]. Attribute `tail` (default 0): X's last `tail` entries along
// the axis go to no output (concat's padding, dropped).
struct SplitGeometry {
  int64_t outer = 1;
  size_t in_row = 0;
  std::vector<size_t> row, offset;
};
SplitGeometry split_geometry(const KernelConfig& cfg);

// slice along `axis` from `start`, Y's extent along it (any dtype): per each of `outer` rows of
// in_row bytes of X, Y's row of out_row bytes begins `offset` bytes in.
struct SliceGeometry {
  int64_t outer = 1;
  size_t in_row = 0, out_row = 0, offset = 0;
};
SliceGeometry slice_geometry(const KernelConfig& cfg);

// resize (X -> Y) and resize_grad (dY -> dX), f32, [N,C,H,W] or [N,C,L] (height 1): attributes
// `mode` (nearest, linear), `coord` (asymmetric, half_pixel, pytorch_half_pixel, align_corners),
// `nearest_mode` (floor, ceil, round_prefer_floor, round_prefer_ceil) and `scales` (one per
// spatial axis, output over input: what the coordinates divide by). Y's spatial sizes are the
// compiler's (ONNX: floor(input x scale), or the sizes the node names).
ResizeSpace resize_space(const KernelConfig& cfg, bool grad);

// strided_slice (X -> Y, f32 or i64) and strided_slice_grad (dY -> dX, f32): attributes `starts`
// and `steps` (one each per axis, steps >= 1); Y's extent along each axis is how many it takes.
// Y's element at index i is X's at offset + sum(i[d] * in_strides[d]) (elements); the gradient
// writes dY there and zeros elsewhere.
struct StridedSliceGeometry {
  std::vector<int64_t> dims, in_strides;  // Y's dims, and X's stride along each times its step
  int64_t offset = 0, total = 0, elem_size = 4;
};
StridedSliceGeometry strided_slice_geometry(const KernelConfig& cfg, bool grad);

// The attributes of the pointwise ops (pointwise_ops.h): a float with a default (NaN refused:
// every comparison with it is false), pow's exponent (required, finite), clip's bounds (unbounded
// by default).
float pointwise_float_attr(const KernelConfig& cfg, const char* kernel, const char* attr, float fallback);
float pow_exponent(const KernelConfig& cfg, const char* kernel);
std::pair<float, float> clip_bounds(const KernelConfig& cfg, const char* kernel);

// The batch norm family over X [N,C,*spatial], seen as N blocks of C channels of `inner`
// contiguous values; each *_config checks a kernel's config and returns what its loops need.
struct ChannelView {
  int64_t n = 0, c = 0, inner = 1;
  int64_t m() const { return n * inner; }  // values per channel
};
// batch_norm_stats (X -> mean, invstd, unbiased var) and batch_norm_train (X, scale, bias -> Y and
// those three), as `kernel`: the view and epsilon.
std::pair<ChannelView, double> batch_norm_stats_config(const KernelConfig& cfg, const char* kernel);
// batch_norm_apply (X, scale, bias, saved mean, saved invstd -> Y): the view and whether a ReLU follows.
std::pair<ChannelView, bool> batch_norm_apply_config(const KernelConfig& cfg);
// batch_norm_train_grad (dY, X, scale, saved mean, saved invstd -> dX, dscale, dbias).
ChannelView batch_norm_train_grad_config(const KernelConfig& cfg);
// batch_norm_stats_update (mean, var, running mean, running var, count -> the last three): C and
// the factor of the batch's statistics: torch's momentum, or with attribute cumulative=1
// (nn.BatchNorm*(momentum=None)) 1 / the count after this batch, a cumulative average.
// batch_norm_stats_update ((batch mean, batch unbiased variance) of each of the module's `calls`
// in a step, in call order, then running mean, running var, num_batches_tracked -> the last
// three, in place): one BatchNorm called k times (a Siamese encoder on two views) updates its
// running statistics k times, as torch does.
struct BatchNormStatsUpdateGeometry {
  int64_t channels = 0;
  int64_t calls = 1;
  double momentum = 0.1;
  bool cumulative = false;
  // The factor for a batch when `count` batches came before it.
  double factor(int64_t count) const { return cumulative ? 1.0 / (double(count) + 1.0) : momentum; }
};
BatchNormStatsUpdateGeometry batch_norm_stats_update_config(const KernelConfig& cfg);
// batch_norm, inference form (X, scale, B, mean, var -> Y): the view and epsilon.
std::pair<ChannelView, float> batch_norm_config(const KernelConfig& cfg);

// global_average_pool (X [N,C,...] -> Y [N,C,1,..]) or, with `grad`, its gradient (dY -> dX): the
// planes (N*C) and the values each averages.
std::pair<int64_t, int64_t> global_average_pool_config(const KernelConfig& cfg, bool grad);

// dropout and dropout_grad (as `kernel`): n elements of a box starting `offset` elements into the
// whole logical tensor, the node's Philox stream, the 24-bit threshold an element's uniform must
// reach to be kept, and 1 / (1 - ratio).
struct DropoutGeometry {
  int64_t n = 0, offset = 0;
  uint32_t stream = 0, threshold = 0;
  float scale = 1.0f;
};
DropoutGeometry dropout_geometry(const KernelConfig& cfg, const char* kernel);

// True when x, right-aligned against y, has each dim 1 or equal to y's (expand, where).
bool broadcasts_to(const Shape& x, const Shape& y);

// mse_loss (pred, target -> the mean of squared differences, []) and, with `grad`, its gradient
// (dloss [], pred, target -> dpred): the element count and the loss's divisor.
std::pair<int64_t, double> mse_loss_config(const KernelConfig& cfg, bool grad);

// assign (state, value -> state = value, in place: ZeRO's replica refresh): the bytes copied.
size_t assign_bytes(const KernelConfig& cfg);

// Row-major element strides of a tensor of `shape`.
std::vector<int64_t> strides_of(const Shape& shape);

// collective_part's boxes (attribute "pieces": per box, summand, input, then its start in that
// input, its start in the output and its extent, one int each per axis), checked: boxes go by
// summand from 0, lie inside their input and the output, and each summand tiles the output
// exactly; only f32 is summed. A box of a later summand is added onto what is there.
struct CollectiveBox {
  int32_t input = 0;
  bool add = false;
  std::vector<int64_t> src, dst, size;
};
std::vector<CollectiveBox> collective_boxes(const KernelConfig& cfg);

// where (cond ? a : b; cond bool, a and b f32, all three broadcast numpy-style, rank <= 8):
// checks the config and returns the output's shape.
Shape where_shape(const KernelConfig& cfg);

// gather along `axis` (default 0): data [A..., V, D...] (A: the axes before axis), indices of any
// shape I (i64 or i32), Y [A..., I..., D...]; gather_grad the other way round (dY, indices) -> dData.
// outer = |A|, vocab = V, row = |D|, count = |I|. gather_grad's attribute `padding_idx` (in
// [0, V)) names a row no index adds to: nn.Embedding(padding_idx=k)'s, whose gradient is zero.
struct GatherGeometry {
  int64_t outer = 1, vocab = 0, row = 1, count = 0;
  bool wide = true;  // int64 indices (else int32)
  int64_t padding = -1;  // gather_grad: the row left at zero (-1: none)
};
GatherGeometry gather_geometry(const KernelConfig& cfg);
GatherGeometry gather_grad_geometry(const KernelConfig& cfg);

// gather_elements (x [D] f32, indices [I] i64 or i32) -> y [I]; scatter_elements (attribute
// `mode`, kernels/elements_space.h): set / add (data [D], indices [I], updates [I]) -> [D],
// add_to_zeros (indices, updates) -> [D] (the output's shape), clear (data, indices) -> [D].
// Attribute `axis` in [0, rank). Checks ranks, extents and dtypes, failing naming cfg.node.
ElementsSpace gather_elements_space(const KernelConfig& cfg);
ElementsSpace scatter_elements_space(const KernelConfig& cfg, ScatterMode& mode);

// Layer normalization over the trailing dims from `axis`: rows of n elements, `epsilon`.
//   layer_norm            (x, scale[, bias]) -> y
//   layer_norm_grad       (dy, x, scale)     -> dx
//   layer_norm_scale_grad (dy, x)            -> dscale
struct LayerNormRows {
  int64_t rows = 0, n = 0;
  float eps = 1e-5f;
  bool bias = false;  // layer_norm only
};
LayerNormRows layer_norm_rows(const KernelConfig& cfg);
LayerNormRows layer_norm_grad_rows(const KernelConfig& cfg);
LayerNormRows layer_norm_scale_grad_rows(const KernelConfig& cfg);

// Instance normalization (ONNX InstanceNormalization: nn.InstanceNorm, and nn.GroupNorm, which
// torch exports as one over [N, groups, rest]): X [N, C, ...] as N*C rows of the remaining
// elements, each row normalized alone, `epsilon`; scale and bias per channel (row r's is r % C).
//   instance_norm            (x, scale[C], bias[C]) -> y
//   instance_norm_grad       (dy, x, scale[C])      -> dx
//   instance_norm_scale_grad (dy, x)                -> dscale[C] (sums over N and the positions)
struct InstanceNormRows {
  int64_t rows = 0, n = 0, channels = 0;
  float eps = 1e-5f;
};
InstanceNormRows instance_norm_rows(const KernelConfig& cfg, const char* kernel);

// transpose: Y = X permuted by `perm` (default: reversed), rank <= 8, any dtype; the output as
// collapsed dims (size-1 axes dropped, axes adjacent in both merged), outermost first, each with
// its input stride in elements.
struct TransposeGeometry {
  std::vector<int64_t> dims, in_strides;
  int64_t total = 0, elem_size = 4;
};
TransposeGeometry transpose_geometry(const KernelConfig& cfg);

// pad (X -> Y) and pad_grad (dY -> dX), f32, rank <= 8: attribute `pads` (ints, 2 x rank, all
// >= 0: every axis's new positions before, then every axis's after, ONNX's order), `mode`
// ("constant", the default, "reflect" or "edge") and `value` (constant mode's fill, default 0).
// Reflect needs each pad below its axis's size, edge a non-empty axis where it pads.
PadSpace pad_space(const KernelConfig& cfg, bool grad);

}  // namespace of::kernels
