// SPDX-License-Identifier: Apache-2.0
#include "kernels/rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/ignore_index.h"
#include "kernels/cpu/check.h"

namespace of::kernels {

using cpu::where_of;

GemmGeometry gemm_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "gemm", 2, 3, 1);
  cpu::check_dtypes(cfg, "gemm", DType::f32);
  const Shape& a = cfg.inputs[0].shape;
  const Shape& b = cfg.inputs[1].shape;
  if (a.size() != 2 || b.size() != 2) fail(where_of(cfg), "gemm: A {} and B {} must be 2-D", shape_str(a), shape_str(b));
  GemmGeometry g;
  g.trans_a = cfg.attrs.get_int("trans_a", 0) != 0;
  g.trans_b = cfg.attrs.get_int("trans_b", 0) != 0;
  g.m = g.trans_a ? a[1] : a[0];
  g.k = g.trans_a ? a[0] : a[1];
  g.n = g.trans_b ? b[0] : b[1];
  if ((g.trans_b ? b[1] : b[0]) != g.k)
    fail(where_of(cfg), "gemm: inner dimensions differ: A {} (trans_a={}), B {} (trans_b={})", shape_str(a),
         int(g.trans_a), shape_str(b), int(g.trans_b));
  cpu::check_output_shape(cfg, "gemm", 0, {g.m, g.n});
  g.lda = std::max<int64_t>(1, a[1]);
  g.ldb = std::max<int64_t>(1, b[1]);
  g.relu = cpu::fused_relu(cfg, "gemm");
  g.alpha = cfg.attrs.get_float("alpha", 1.0f);
  g.beta = cfg.attrs.get_float("beta", 1.0f);
  g.has_c = cfg.inputs.size() == 3 && g.beta != 0.0f;
  if (cfg.inputs.size() == 3) {
    const Shape& c = cfg.inputs[2].shape;
    if (c.size() > 2) fail(where_of(cfg), "gemm: C {} has rank > 2", shape_str(c));
    const int64_t rows = c.size() == 2 ? c[0] : 1;
    const int64_t cols = c.empty() ? 1 : c.back();
    if ((rows != 1 && rows != g.m) || (cols != 1 && cols != g.n))
      fail(where_of(cfg), "gemm: C {} does not broadcast to [{},{}]", shape_str(c), g.m, g.n);
    g.c_row_stride = rows == 1 ? 0 : cols;
    g.c_col_stride = cols == 1 ? 0 : 1;
  }
  return g;
}

namespace {

// The axes a reduction's attributes name (sorted `axes`, absent: all; `keepdims`) over X, as a
// flag per axis, and the output's shape.
Shape reduced_shape(const KernelConfig& cfg, const char* name, const Shape& x, std::vector<bool>& reduced) {
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = cfg.attrs.get_ints("axes", {});
  if (!cfg.attrs.has("axes"))
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
      fail(where_of(cfg), "{}: axes must be sorted, distinct and in [0,{}) for X {}", name, rank, shape_str(x));
  const int64_t keepdims = cfg.attrs.get_int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1) fail(where_of(cfg), "{}: keepdims must be 0 or 1, got {}", name, keepdims);
  reduced.assign(size_t(rank), false);
  for (int64_t a : axes) reduced[size_t(a)] = true;
  Shape y;
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[size_t(i)])
      y.push_back(x[size_t(i)]);
    else if (keepdims)
      y.push_back(1);
  return y;
}

}  // namespace

namespace {

// X's kept and reduced axes for a reduction over `axes` (Y's shape already checked).
ReduceMaxSpace reduction_space(const KernelConfig& cfg, const char* name, const Shape& x, const std::vector<bool>& reduced, const Shape& y) {
  ReduceMaxSpace s;
  const std::vector<int64_t> strides = strides_of(x);
  for (size_t i = 0; i < x.size(); ++i) {
    if (reduced[i]) {
      if (x[i] == 0) fail(where_of(cfg), "{}: axis {} of X {} is empty: there is no maximum", name, i, shape_str(x));
      s.red_dims[s.reduced] = x[i];
      s.red_strides[s.reduced++] = strides[i];
      s.per_out *= x[i];
    } else {
      s.kept_dims[s.kept] = x[i];
      s.kept_strides[s.kept++] = strides[i];
    }
  }
  s.out_n = numel(y);
  return s;
}

}  // namespace

ReduceMaxSpace reduce_max_space(const KernelConfig& cfg, bool grad) {
  const char* name = grad ? "reduce_max_grad" : "reduce_max";
  cpu::check_arity(cfg, name, grad ? 3 : 1, grad ? 3 : 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  const Shape& x = grad ? cfg.inputs[1].shape : cfg.inputs[0].shape;
  if (x.size() > size_t(ReduceMaxSpace::kMaxRank)) fail(where_of(cfg), "{}: rank {} exceeds {}", name, x.size(), ReduceMaxSpace::kMaxRank);
  std::vector<bool> reduced;
  const Shape y = reduced_shape(cfg, name, x, reduced);
  if (grad) {
    cpu::check_input_shape(cfg, name, 0, "dY", y);
    cpu::check_input_shape(cfg, name, 2, "Y", y);
    cpu::check_output_shape(cfg, name, 0, x);
  } else {
    cpu::check_output_shape(cfg, name, 0, y);
  }
  return reduction_space(cfg, name, x, reduced, y);
}

ReduceMaxSpace argmax_space(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "argmax", 1, 1, 1);
  cpu::check_dtypes(cfg, "argmax", {DType::f32}, {DType::i64});
  const Shape& x = cfg.inputs[0].shape;
  if (x.size() > size_t(ReduceMaxSpace::kMaxRank)) fail(where_of(cfg), "argmax: rank {} exceeds {}", x.size(), ReduceMaxSpace::kMaxRank);
  if (cfg.attrs.get_ints("axes").size() != 1) fail(where_of(cfg), "argmax: reduces one axis, axes [{}]", fmt::join(cfg.attrs.get_ints("axes"), ","));
  std::vector<bool> reduced;
  const Shape y = reduced_shape(cfg, "argmax", x, reduced);
  cpu::check_output_shape(cfg, "argmax", 0, y);
  return reduction_space(cfg, "argmax", x, reduced, y);
}

RandomGeometry random_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "random", 0, 1, 1);
  if (cfg.outputs[0].dtype != DType::f32) fail(where_of(cfg), "random: output 0 is {}, not f32", dtype_name(cfg.outputs[0].dtype));
  RandomGeometry g;
  g.n = numel(cfg.outputs[0].shape);
  const int64_t normal = cfg.attrs.get_int("normal", 0);
  if (normal != 0 && normal != 1) fail(where_of(cfg), "random: normal is {}, not 0 or 1", normal);
  g.normal = normal == 1;
  g.a = cfg.attrs.get_float("a", 0.0f);
  g.b = cfg.attrs.get_float("b", 1.0f);
  if (!std::isfinite(g.a) || !std::isfinite(g.b)) fail(where_of(cfg), "random: a {} and b {} must be finite", g.a, g.b);
  g.stream = uint32_t(cfg.attrs.get_int("stream", 0));
  return g;
}

TopKSpace topk_space(const KernelConfig& cfg, bool grad) {
  const char* name = grad ? "topk_grad" : "topk";
  cpu::check_arity(cfg, name, grad ? 2 : 1, grad ? 2 : 1, grad ? 1 : 2);
  const Shape& x = grad ? cfg.outputs[0].shape : cfg.inputs[0].shape;
  if (grad) {
    cpu::check_dtypes(cfg, name, {DType::f32, DType::i64}, {DType::f32});
  } else {
    cpu::check_dtypes(cfg, name, {DType::f32}, {DType::f32, DType::i64});
  }
  const int64_t rank = int64_t(x.size()), axis = cfg.attrs.get_int("axis", -1), k = cfg.attrs.get_int("k", 0);
  if (axis < 0 || axis >= rank) fail(where_of(cfg), "{}: axis {} is outside the rank {} of {}", name, axis, rank, shape_str(x));
  if (k < 1 || k > x[size_t(axis)]) fail(where_of(cfg), "{}: k {} is outside [1, {}] (axis {} of {})", name, k, x[size_t(axis)], axis, shape_str(x));
  Shape picked = x;
  picked[size_t(axis)] = k;
  if (grad) {
    for (int i = 0; i < 2; ++i) cpu::check_input_shape(cfg, name, i, i == 0 ? "dy" : "indices", picked);
  } else {
    cpu::check_output_shape(cfg, name, 0, picked);
    cpu::check_output_shape(cfg, name, 1, picked);
  }
  TopKSpace s;
  for (int64_t a = 0; a < axis; ++a) s.outer *= x[size_t(a)];
  for (int64_t a = axis + 1; a < rank; ++a) s.inner *= x[size_t(a)];
  s.n = x[size_t(axis)];
  s.k = k;
  s.largest = cfg.attrs.get_int("largest", 1) != 0;
  return s;
}

ReduceGeometry reduce_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "reduce_sum", 1, 1, 1);
  cpu::check_dtypes(cfg, "reduce_sum", DType::f32);
  const Shape& x = cfg.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<bool> reduced;
  const Shape y = reduced_shape(cfg, "reduce_sum", x, reduced);
  cpu::check_output_shape(cfg, "reduce_sum", 0, y);
  ReduceGeometry g;
  g.in_n = numel(x);
  g.out_n = numel(y);
  g.divisor = cfg.attrs.get_float("divisor", 1.0f);
  if (!(g.divisor > 0.0f)) fail(where_of(cfg), "reduce_sum: divisor must be positive, got {}", g.divisor);
  // Merge runs of same-kind axes, dropping size-1 ones (they change neither offset).
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x[size_t(i)];
    if (d == 1) continue;
    if (!g.reduced.empty() && g.reduced.back() == reduced[size_t(i)]) {
      g.dims.back() *= d;
    } else {
      g.dims.push_back(d);
      g.reduced.push_back(reduced[size_t(i)]);
    }
  }
  return g;
}

std::vector<const char*> adam_states(bool amsgrad) {
  std::vector<const char*> s{"m", "v"};
  if (amsgrad) s.push_back("vmax");
  return s;
}

std::vector<const char*> rmsprop_states(bool momentum, bool centered) {
  std::vector<const char*> s{"square_avg"};
  if (momentum) s.push_back("momentum_buffer");
  if (centered) s.push_back("grad_avg");
  return s;
}

int64_t update_layout(const KernelConfig& cfg, const char* name, const std::vector<const char*>& states) {
  if (cfg.attrs.get_int("micro_batches", 1) != 1)
    fail(where_of(cfg), "{}: micro_batches {} (plans now sum micro-batches in an accumulate task; recompile the plan)",
         name, cfg.attrs.get_int("micro_batches", 1));
  std::vector<const char*> names{"param", "grad"};
  names.insert(names.end(), states.begin(), states.end());
  const int tensors = int(names.size());
  names.push_back("lr");
  names.push_back("step");
  const int inputs = int(names.size());
  const int64_t last = cfg.attrs.get_int("param_last", 0);
  if (last != 0 && last != 1) fail(where_of(cfg), "{}: param_last must be 0 or 1, got {}", name, last);
  const int outputs = tensors - 1;
  cpu::check_arity(cfg, name, inputs, inputs, outputs);
  cpu::check_dtypes(cfg, name, DType::f32);
  const Shape& p = cfg.inputs[0].shape;
  for (int i = 1; i < tensors; ++i) cpu::check_input_shape(cfg, name, i, names[size_t(i)], p);
  for (int i = tensors; i < inputs; ++i) {
    const Shape& s = cfg.inputs[size_t(i)].shape;
    if (numel(s) != 1 || s.size() > 1)
      fail(where_of(cfg), "{}: input {} ({}) has shape {}, expected a scalar []", name, i, names[size_t(i)], shape_str(s));
  }
  for (int i = 0; i < outputs; ++i) cpu::check_output_shape(cfg, name, i, p);
  return numel(p);
}

UpdateOutputs update_outputs(const KernelConfig& cfg) {
  if (cfg.attrs.get_int("param_last", 0) == 0) return {};
  return {.param = int(cfg.outputs.size()) - 1, .first_state = 0};
}

float float_attr_at_least(const KernelConfig& cfg, const char* name, const char* attr, float fallback, float lo) {
  const float v = cfg.attrs.get_float(attr, fallback);
  if (!(v >= lo)) fail(where_of(cfg), "{}: attribute '{}' is {}, expected >= {}", name, attr, v, lo);
  return v;
}

std::pair<int64_t, int64_t> xent_dims(const KernelConfig& cfg, const char* name, int at) {
  const Shape& p = cfg.inputs[size_t(at)].shape;
  if (p.size() != 2) fail(where_of(cfg), "{}: input {} {} must be [N,C]", name, at, shape_str(p));
  cpu::check_input_shape(cfg, name, at + 1, "labels", {p[0]});
  return {p[0], p[1]};
}

float loss_scale(const KernelConfig& cfg) {
  const float scale = cfg.attrs.get_float("scale", 1.0f);
  if (!(scale > 0.0f && scale <= 1.0f)) fail(where_of(cfg), "loss: scale {} must be in (0, 1]", scale);
  return scale;
}

double loss_denominator(const KernelConfig& cfg, int64_t n) { return static_cast<double>(n) / static_cast<double>(loss_scale(cfg)); }

float label_smoothing(const KernelConfig& cfg, const char* name) {
  const float e = cfg.attrs.get_float("label_smoothing", 0.0f);
  if (!(e >= 0.0f && e <= 1.0f)) fail(where_of(cfg), "{}: label_smoothing {} must be in [0, 1]", name, e);
  return e;
}

int64_t ignore_index(const KernelConfig& cfg) { return cfg.attrs.get_int("ignore_index", kDefaultIgnoreIndex); }

bool loss_sums(const KernelConfig& cfg) {
  const int64_t sum = cfg.attrs.get_int("sum", 0);
  if (sum != 0 && sum != 1) fail(where_of(cfg), "loss: sum {} must be 0 or 1", sum);
  return sum == 1;
}

std::vector<DType> xent_input_dtypes(const KernelConfig& cfg, std::vector<DType> t) {
  if (cfg.inputs.size() > t.size()) t.push_back(DType::f32);  // class weights
  return t;
}

bool class_weights(const KernelConfig& cfg, const char* name, size_t at, int64_t classes, float smoothing) {
  if (cfg.inputs.size() <= at) return false;
  const TensorDesc& w = cfg.inputs[at];
  if (w.dtype != DType::f32 || w.shape != Shape{classes})
    fail(where_of(cfg), "{}: input {} (class weights) is {} {}, expected f32 [{}]", name, at, dtype_name(w.dtype), shape_str(w.shape), classes);
  if (smoothing > 0.0f) fail(where_of(cfg), "{}: class weights with label smoothing are not supported", name);
  return true;
}

int64_t accumulate_micro_batches(const KernelConfig& cfg) {
  const char* name = "accumulate";
  cpu::check_arity(cfg, name, 3, 3, 3);
  cpu::check_dtypes(cfg, name, DType::f32);
  const int64_t k = cfg.attrs.get_int("micro_batches", 0);
  if (k < 1 || k > (1 << 20)) fail(where_of(cfg), "{}: micro_batches {} is outside [1, 2^20]", name, k);
  cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
  for (int i = 1; i < 3; ++i) {
    if (numel(cfg.inputs[size_t(i)].shape) != 1) fail(where_of(cfg), "{}: input {} must be a scalar", name, i);
    cpu::check_output_shape(cfg, name, i, cfg.inputs[size_t(i)].shape);
  }
  return k;
}

int64_t cast_elements(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "cast", 1, 1, 1);
  cpu::check_output_shape(cfg, "cast", 0, cfg.inputs[0].shape);
  const DType from = cfg.inputs[0].dtype, to = cfg.outputs[0].dtype;
  const bool to_ok = to == DType::f32 || to == DType::bool_ || to == DType::i64;
  if (!to_ok || (from != DType::f32 && from != DType::i64 && from != DType::bool_))
    fail(where_of(cfg), "cast: {} to {} is not supported", dtype_name(from), dtype_name(to));
  return numel(cfg.inputs[0].shape);
}

ClipIntBounds clip_int_bounds(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "clip_int", 1, 1, 1);
  cpu::check_dtypes(cfg, "clip_int", DType::i64);
  cpu::check_output_shape(cfg, "clip_int", 0, cfg.inputs[0].shape);
  return {numel(cfg.inputs[0].shape), cfg.attrs.get_int("min", INT64_MIN), cfg.attrs.get_int("max", INT64_MAX)};
}

int64_t logical_not_elements(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "logical_not", 1, 1, 1);
  cpu::check_dtypes(cfg, "logical_not", DType::bool_);
  cpu::check_output_shape(cfg, "logical_not", 0, cfg.inputs[0].shape);
  return numel(cfg.inputs[0].shape);
}

size_t copy_bytes(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "copy", 1, 1, 1);
  const TensorDesc& x = cfg.inputs[0];
  const TensorDesc& y = cfg.outputs[0];
  if (x.dtype != y.dtype || numel(x.shape) != numel(y.shape))
    fail(where_of(cfg), "copy: input {} {} and output {} {} differ in dtype or size", dtype_name(x.dtype),
         shape_str(x.shape), dtype_name(y.dtype), shape_str(y.shape));
  return static_cast<size_t>(x.bytes());
}

int64_t unary_count(const KernelConfig& cfg, const char* name) {
  cpu::check_arity(cfg, name, 1, 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
  return numel(cfg.inputs[0].shape);
}

int64_t unary_grad_count(const KernelConfig& cfg, const char* name, const char* second) {
  cpu::check_arity(cfg, name, 2, 2, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  cpu::check_input_shape(cfg, name, 1, second, cfg.inputs[0].shape);
  cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
  return numel(cfg.inputs[0].shape);
}

cpu::AxisView softmax_view(const KernelConfig& cfg, const char* name) {
  cpu::check_arity(cfg, name, 1, 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
  return cpu::axis_view(cfg, name, cfg.inputs[0].shape);
}

cpu::AxisView softmax_grad_view(const KernelConfig& cfg, const char* name) {
  cpu::check_arity(cfg, name, 2, 2, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  const Shape& s = cfg.inputs[0].shape;
  cpu::check_input_shape(cfg, name, 1, "y", s);
  cpu::check_output_shape(cfg, name, 0, s);
  return cpu::axis_view(cfg, name, s);
}

MaskedSoftmaxView masked_softmax_view(const KernelConfig& cfg, const char* name, bool grad) {
  const int n_in = grad ? 3 : 2;
  cpu::check_arity(cfg, name, n_in, n_in, 1);
  std::vector<DType> in(size_t(n_in), DType::f32);
  in.back() = DType::bool_;
  cpu::check_dtypes(cfg, name, in, {DType::f32});
  const Shape& x = cfg.inputs[0].shape;
  if (grad) cpu::check_input_shape(cfg, name, 1, "y", x);
  cpu::check_output_shape(cfg, name, 0, x);
  Shape cond = cfg.inputs[size_t(n_in - 1)].shape;
  while (!cond.empty() && cond.front() == 1) cond.erase(cond.begin());
  if (x.empty() || cond.empty() || cond.size() > x.size() || !std::equal(cond.begin(), cond.end(), x.end() - int64_t(cond.size())))
    fail(where_of(cfg), "{}: condition {} is not the last dims of x {}", name, shape_str(cfg.inputs[size_t(n_in - 1)].shape), shape_str(x));
  MaskedSoftmaxView v;
  v.n = x.back();
  v.rows = v.n == 0 ? 0 : numel(x) / v.n;
  v.cond_rows = v.n == 0 ? 1 : std::max<int64_t>(1, numel(cond) / v.n);
  v.masked = cfg.attrs.get_int("masked", 1) != 0;
  return v;
}

MatMulGeometry matmul_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "matmul", 2, 2, 1);
  cpu::check_dtypes(cfg, "matmul", DType::f32);
  MatMulGeometry g;
  g.trans_a = cfg.attrs.get_int("trans_a", 0) != 0;
  g.trans_b = cfg.attrs.get_int("trans_b", 0) != 0;
  // The operands as the product reads them: a transposed one's last two dims swapped.
  auto as_read = [&](const Shape& s, bool transposed, const char* which) {
    if (!transposed) return s;
    if (s.size() < 2) fail(where_of(cfg), "matmul: {} {} is read transposed and must have rank >= 2", which, shape_str(s));
    Shape t = s;
    std::swap(t[t.size() - 1], t[t.size() - 2]);
    return t;
  };
  const Shape a = as_read(cfg.inputs[0].shape, g.trans_a, "A");
  const Shape b = as_read(cfg.inputs[1].shape, g.trans_b, "B");
  if (a.empty() || b.empty())
    fail(where_of(cfg), "matmul: operands {} and {} must have rank >= 1", shape_str(a), shape_str(b));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  g.m = a_vec ? 1 : a[a.size() - 2];
  g.k = a.back();
  g.n = b_vec ? 1 : b.back();
  const int64_t kb = b_vec ? b[0] : b[b.size() - 2];
  if (kb != g.k) fail(where_of(cfg), "matmul: inner dimensions differ: {} x {}", shape_str(a), shape_str(b));

  // Broadcast the batch dimensions (all but the last two), aligned at the right.
  const Shape a_batch(a.begin(), a.end() - (a_vec ? 1 : 2));
  const Shape b_batch(b.begin(), b.end() - (b_vec ? 1 : 2));
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  Shape batch(rank);
  std::vector<int64_t> a_stride(rank, 0), b_stride(rank, 0);
  int64_t sa = g.m * g.k, sb = g.k * g.n;
  for (size_t i = rank; i-- > 0;) {
    const size_t ia = i + a_batch.size(), ib = i + b_batch.size();  // >= rank when present
    const int64_t da = ia >= rank ? a_batch[ia - rank] : 1;
    const int64_t db = ib >= rank ? b_batch[ib - rank] : 1;
    if (da != db && da != 1 && db != 1)
      fail(where_of(cfg), "matmul: batch dimensions of {} and {} do not broadcast", shape_str(a), shape_str(b));
    batch[i] = da == 1 ? db : da;
    a_stride[i] = da == 1 ? 0 : sa;
    b_stride[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  Shape y = batch;
  if (!a_vec) y.push_back(g.m);
  if (!b_vec) y.push_back(g.n);
  cpu::check_output_shape(cfg, "matmul", 0, y);

  const int64_t batches = numel(batch);
  if (numel(b_batch) == 1 && numel(a_batch) == batches && !g.trans_a) {
    // B is shared and A's rows are one after another: fold the batch into M, one large product.
    g.m *= batches;
    g.a_offsets = {0};
    g.b_offsets = {0};
    return g;
  }
  g.a_offsets.resize(size_t(batches));
  g.b_offsets.resize(size_t(batches));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < rank; ++i) {
      oa += idx[i] * a_stride[i];
      ob += idx[i] * b_stride[i];
    }
    g.a_offsets[size_t(t)] = oa;
    g.b_offsets[size_t(t)] = ob;
    for (size_t i = rank; i-- > 0;) {  // odometer over the batch index
      if (++idx[i] < batch[i]) break;
      idx[i] = 0;
    }
  }
  return g;
}

MatMulGeometry matmul_tb_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "matmul_tb", 2, 2, 1);
  cpu::check_dtypes(cfg, "matmul_tb", DType::f32);
  const Shape& a = cfg.inputs[0].shape;
  const Shape& b = cfg.inputs[1].shape;
  if (a.size() < 2 || b.size() != 2 || a.back() != b[1])
    fail(where_of(cfg), "matmul_tb: operands {} and {} must be [..., M, K] and [N, K]", shape_str(a), shape_str(b));
  Shape y(a.begin(), a.end() - 1);
  y.push_back(b[0]);
  cpu::check_output_shape(cfg, "matmul_tb", 0, y);
  MatMulGeometry g;
  g.m = numel(a) / std::max<int64_t>(a.back(), 1);
  if (a.back() == 0) g.m = numel(y) / std::max<int64_t>(b[0], 1);
  g.k = a.back();
  g.n = b[0];
  g.trans_b = true;
  g.a_offsets = {0};
  g.b_offsets = {0};
  return g;
}

ConcatGeometry concat_geometry(const KernelConfig& cfg) {
  ConcatGeometry g;
  if (cfg.inputs.empty() || cfg.outputs.size() != 1)
    fail(where_of(cfg), "concat: expected >= 1 inputs and 1 output, got {} and {}",
         cfg.inputs.size(), cfg.outputs.size());
  const TensorDesc& y = cfg.outputs[0];
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  const int64_t axis = cfg.attrs.get_int("axis", 0);
  if (axis < 0 || axis >= rank)
    fail(where_of(cfg), "concat: axis {} out of range for output {}", axis, shape_str(y.shape));
  for (int64_t i = 0; i < axis; ++i) g.outer *= y.shape[i];
  int64_t inner = 1, total = 0;
  for (int64_t i = axis + 1; i < rank; ++i) inner *= y.shape[i];
  for (size_t k = 0; k < cfg.inputs.size(); ++k) {
    const TensorDesc& x = cfg.inputs[k];
    bool ok = x.dtype == y.dtype && static_cast<int64_t>(x.shape.size()) == rank;
    for (int64_t i = 0; ok && i < rank; ++i) ok = i == axis || x.shape[i] == y.shape[i];
    if (!ok)
      fail(where_of(cfg), "concat: input {} ({} {}) does not fit output {} {} on axis {}", k,
           dtype_name(x.dtype), shape_str(x.shape), dtype_name(y.dtype), shape_str(y.shape), axis);
    total += x.shape[axis];
    g.block_bytes.push_back(static_cast<size_t>(x.shape[axis] * inner * dtype_size(y.dtype)));
  }
  const int64_t tail = cfg.attrs.get_int("tail", 0);
  if (tail < 0 || tail > y.shape[axis] || total != y.shape[axis] - tail)
    fail(where_of(cfg), "concat: inputs sum to {} along axis {} and tail is {}, output has {}", total, axis, tail,
         y.shape[axis]);
  g.tail_bytes = static_cast<size_t>(tail * inner * dtype_size(y.dtype));
  return g;
}

SplitGeometry split_geometry(const KernelConfig& cfg) {
  SplitGeometry g;
  if (cfg.inputs.size() != 1 || cfg.outputs.empty())
    fail(where_of(cfg), "split: expected 1 input and >= 1 outputs, got {} and {}",
         cfg.inputs.size(), cfg.outputs.size());
  const TensorDesc& x = cfg.inputs[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (!cfg.attrs.has("axis")) fail(where_of(cfg), "split: attribute 'axis' is required");
  const int64_t axis = cfg.attrs.get_int("axis", -1);
  if (axis < 0 || axis >= rank)
    fail(where_of(cfg), "split: axis {} out of range for input {}", axis, shape_str(x.shape));
  for (int64_t i = 0; i < axis; ++i) g.outer *= x.shape[size_t(i)];
  size_t inner = size_t(dtype_size(x.dtype));
  for (int64_t i = axis + 1; i < rank; ++i) inner *= size_t(x.shape[size_t(i)]);
  g.in_row = inner * size_t(x.shape[size_t(axis)]);
  int64_t total = 0;
  for (size_t k = 0; k < cfg.outputs.size(); ++k) {
    const TensorDesc& y = cfg.outputs[k];
    bool ok = y.dtype == x.dtype && static_cast<int64_t>(y.shape.size()) == rank;
    for (int64_t i = 0; ok && i < rank; ++i)
      ok = i == axis || y.shape[size_t(i)] == x.shape[size_t(i)];
    if (!ok)
      fail(where_of(cfg), "split: output {} ({} {}) does not fit input {} {} off axis {}", k,
           dtype_name(y.dtype), shape_str(y.shape), dtype_name(x.dtype), shape_str(x.shape), axis);
    g.offset.push_back(inner * size_t(total));
    g.row.push_back(inner * size_t(y.shape[size_t(axis)]));
    total += y.shape[size_t(axis)];
  }
  const int64_t tail = cfg.attrs.get_int("tail", 0);
  if (tail < 0 || tail > x.shape[size_t(axis)] || total != x.shape[size_t(axis)] - tail)
    fail(where_of(cfg), "split: outputs sum to {} along axis {} and tail is {}, input has {}", total, axis, tail,
         x.shape[size_t(axis)]);
  return g;
}

Shape where_shape(const KernelConfig& cfg) {
  constexpr size_t kMaxWhereRank = 8;
  cpu::check_arity(cfg, "where", 3, 3, 1);
  cpu::check_dtypes(cfg, "where", {DType::bool_, DType::f32, DType::f32}, {DType::f32});
  const Shape& c = cfg.inputs[0].shape;
  const Shape& a = cfg.inputs[1].shape;
  const Shape& b = cfg.inputs[2].shape;
  const size_t rank = std::max({c.size(), a.size(), b.size()});
  if (rank > kMaxWhereRank) fail(where_of(cfg), "where: rank {} exceeds {}", rank, kMaxWhereRank);
  Shape y(rank, 1);
  for (const Shape* s : {&c, &a, &b})
    for (size_t i = 0; i < s->size(); ++i) {
      const int64_t d = (*s)[i];
      int64_t& yd = y[i + rank - s->size()];
      if (d != 1 && yd != 1 && d != yd)
        fail(where_of(cfg), "where: shapes {}, {} and {} do not broadcast", shape_str(c),
             shape_str(a), shape_str(b));
      if (d != 1) yd = d;
    }
  cpu::check_output_shape(cfg, "where", 0, y);
  return y;
}

namespace {

GatherGeometry gather_shape(const KernelConfig& cfg, const char* name, const Shape& table, const TensorDesc& indices,
                            const Shape& rows) {
  GatherGeometry s;
  if (table.empty()) fail(where_of(cfg), "{}: the table is a scalar", name);
  if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
    fail(where_of(cfg), "{}: indices have dtype {}, expected int64 or int32", name, dtype_name(indices.dtype));
  const int64_t axis = cfg.attrs.get_int("axis", 0);
  if (axis < 0 || axis >= int64_t(table.size()))
    fail(where_of(cfg), "{}: axis {} is out of range for the table {}", name, axis, shape_str(table));
  Shape want(table.begin(), table.begin() + axis);
  want.insert(want.end(), indices.shape.begin(), indices.shape.end());
  want.insert(want.end(), table.begin() + axis + 1, table.end());
  if (rows != want)
    fail(where_of(cfg), "{}: rows {} do not match indices {} and table {} along axis {}", name, shape_str(rows),
         shape_str(indices.shape), shape_str(table), axis);
  for (int64_t k = 0; k < axis; ++k) s.outer *= table[size_t(k)];
  s.vocab = table[size_t(axis)];
  for (size_t k = size_t(axis) + 1; k < table.size(); ++k) s.row *= table[k];
  s.count = numel(indices.shape);
  s.wide = indices.dtype == DType::i64;
  return s;
}

}  // namespace

GatherGeometry gather_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "gather", 2, 2, 1);
  if (cfg.inputs[0].dtype != DType::f32 || cfg.outputs[0].dtype != DType::f32) fail(where_of(cfg), "gather: data must be f32");
  return gather_shape(cfg, "gather", cfg.inputs[0].shape, cfg.inputs[1], cfg.outputs[0].shape);
}

GatherGeometry gather_grad_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "gather_grad", 2, 2, 1);
  if (cfg.inputs[0].dtype != DType::f32 || cfg.outputs[0].dtype != DType::f32)
    fail(where_of(cfg), "gather_grad: dY must be f32");
  GatherGeometry s = gather_shape(cfg, "gather_grad", cfg.outputs[0].shape, cfg.inputs[1], cfg.inputs[0].shape);
  s.padding = cfg.attrs.get_int("padding_idx", -1);
  if (s.padding < -1 || s.padding >= s.vocab)
    fail(where_of(cfg), "gather_grad: padding_idx {} is outside the table's {} rows", s.padding, s.vocab);
  return s;
}

namespace {

// Indices `idx` into data of shape `data` along attribute axis: the shared space.
ElementsSpace elements_space(const KernelConfig& cfg, const char* kernel, const Shape& data, const TensorDesc& idx) {
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32) fail(where_of(cfg), "{}: indices must be i64 or i32, are {}", kernel, dtype_name(idx.dtype));
  const auto rank = int64_t(data.size());
  if (rank < 1 || rank > kMaxElementsRank || int64_t(idx.shape.size()) != rank)
    fail(where_of(cfg), "{}: indices {} and data {} need one rank in [1, {}]", kernel, shape_str(idx.shape), shape_str(data), kMaxElementsRank);
  const int64_t axis = cfg.attrs.get_int("axis", 0);
  if (axis < 0 || axis >= rank) fail(where_of(cfg), "{}: axis {} does not fit rank {}", kernel, axis, rank);
  ElementsSpace s;
  s.rank = int(rank);
  s.axis = int(axis);
  s.axis_len = data[size_t(axis)];
  s.wide = idx.dtype == DType::i64;
  s.count = numel(idx.shape);
  s.data_count = numel(data);
  int64_t is = 1, ds = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d != axis && idx.shape[size_t(d)] > data[size_t(d)])
      fail(where_of(cfg), "{}: indices {} exceed data {} on axis {}", kernel, shape_str(idx.shape), shape_str(data), d);
    s.idx_dims[d] = idx.shape[size_t(d)];
    s.idx_strides[d] = is;
    s.data_strides[d] = ds;
    is *= idx.shape[size_t(d)];
    ds *= data[size_t(d)];
  }
  return s;
}

}  // namespace

ElementsSpace gather_elements_space(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "gather_elements", 2, 2, 1);
  if (cfg.inputs[0].dtype != DType::f32 || cfg.outputs[0].dtype != DType::f32) fail(where_of(cfg), "gather_elements: x and y must be f32");
  cpu::check_output_shape(cfg, "gather_elements", 0, cfg.inputs[1].shape);
  return elements_space(cfg, "gather_elements", cfg.inputs[0].shape, cfg.inputs[1]);
}

ElementsSpace scatter_elements_space(const KernelConfig& cfg, ScatterMode& mode) {
  const int64_t m = cfg.attrs.get_int("mode", 0);
  if (m < 0 || m > 3) fail(where_of(cfg), "scatter_elements: mode {} is not 0 (set), 1 (add), 2 (add to zeros) or 3 (clear)", m);
  mode = ScatterMode(m);
  const bool two = mode == ScatterMode::add_to_zeros || mode == ScatterMode::clear;
  cpu::check_arity(cfg, "scatter_elements", two ? 2 : 3, two ? 2 : 3, 1);
  const Shape& y = cfg.outputs[0].shape;
  const size_t idx = mode == ScatterMode::add_to_zeros ? 0 : 1;
  if (cfg.outputs[0].dtype != DType::f32) fail(where_of(cfg), "scatter_elements: y must be f32");
  if (mode != ScatterMode::add_to_zeros) {
    if (cfg.inputs[0].dtype != DType::f32) fail(where_of(cfg), "scatter_elements: data must be f32");
    cpu::check_output_shape(cfg, "scatter_elements", 0, cfg.inputs[0].shape);
  }
  if (mode != ScatterMode::clear) {
    const TensorDesc& updates = cfg.inputs[idx + 1];
    if (updates.dtype != DType::f32 || updates.shape != cfg.inputs[idx].shape)
      fail(where_of(cfg), "scatter_elements: updates {} must be f32 of the indices' shape {}", shape_str(updates.shape),
           shape_str(cfg.inputs[idx].shape));
  }
  return elements_space(cfg, "scatter_elements", y, cfg.inputs[idx]);
}

namespace {

LayerNormRows rows_of(const KernelConfig& cfg, const char* name, const Shape& x) {
  const int64_t axis = cfg.attrs.get_int("axis", -1);
  if (axis < 0 || axis >= int64_t(x.size())) fail(where_of(cfg), "{}: axis {} does not fit {}", name, axis, shape_str(x));
  LayerNormRows r;
  r.rows = 1;
  r.n = 1;
  for (int64_t k = 0; k < int64_t(x.size()); ++k) (k < axis ? r.rows : r.n) *= x[size_t(k)];
  r.eps = cfg.attrs.get_float("epsilon", 1e-5f);
  if (!(r.eps > 0.0f)) fail(where_of(cfg), "{}: epsilon {} must be positive", name, r.eps);
  return r;
}

}  // namespace

InstanceNormRows instance_norm_rows(const KernelConfig& cfg, const char* kernel) {
  const std::string_view k = kernel;
  const bool forward = k == "instance_norm", scale_grad = k == "instance_norm_scale_grad";
  cpu::check_arity(cfg, kernel, forward ? 3 : scale_grad ? 2 : 3, 3, 1);
  cpu::check_dtypes(cfg, kernel, DType::f32);
  const Shape& x = forward ? cfg.inputs[0].shape : cfg.inputs[1].shape;
  if (x.size() < 3) fail(where_of(cfg), "{}: X {} must be [N, C, ...] with at least one more axis", kernel, shape_str(x));
  InstanceNormRows r;
  r.channels = x[1];
  r.rows = x[0] * x[1];
  r.n = numel(x) / std::max<int64_t>(r.rows, 1);
  if (x[0] * x[1] == 0) r.n = 0;
  r.eps = cfg.attrs.get_float("epsilon", 1e-5f);
  if (!(r.eps >= 0.0f) || !std::isfinite(r.eps)) fail(where_of(cfg), "{}: epsilon {} must be finite and >= 0", kernel, r.eps);
  const Shape per_channel{r.channels};
  if (!forward) cpu::check_input_shape(cfg, kernel, 0, "dY", x);
  if (forward) {
    cpu::check_input_shape(cfg, kernel, 1, "scale", per_channel);
    cpu::check_input_shape(cfg, kernel, 2, "bias", per_channel);
  } else if (!scale_grad) {
    cpu::check_input_shape(cfg, kernel, 2, "scale", per_channel);
  }
  cpu::check_output_shape(cfg, kernel, 0, scale_grad ? per_channel : x);
  return r;
}

LayerNormRows layer_norm_rows(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "layer_norm", 2, 3, 1);
  cpu::check_dtypes(cfg, "layer_norm", DType::f32);
  LayerNormRows r = rows_of(cfg, "layer_norm", cfg.inputs[0].shape);
  for (size_t i = 1; i < cfg.inputs.size(); ++i)
    if (numel(cfg.inputs[i].shape) != r.n)
      fail(where_of(cfg), "layer_norm: input {} has {} elements, rows have {}", i, numel(cfg.inputs[i].shape), r.n);
  cpu::check_output_shape(cfg, "layer_norm", 0, cfg.inputs[0].shape);
  r.bias = cfg.inputs.size() > 2;
  return r;
}

LayerNormRows layer_norm_grad_rows(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "layer_norm_grad", 3, 3, 1);
  cpu::check_dtypes(cfg, "layer_norm_grad", DType::f32);
  const LayerNormRows r = rows_of(cfg, "layer_norm_grad", cfg.inputs[1].shape);
  cpu::check_input_shape(cfg, "layer_norm_grad", 0, "dY", cfg.inputs[1].shape);
  if (numel(cfg.inputs[2].shape) != r.n)
    fail(where_of(cfg), "layer_norm_grad: scale has {} elements, rows have {}", numel(cfg.inputs[2].shape), r.n);
  cpu::check_output_shape(cfg, "layer_norm_grad", 0, cfg.inputs[1].shape);
  return r;
}

LayerNormRows layer_norm_scale_grad_rows(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "layer_norm_scale_grad", 2, 2, 1);
  cpu::check_dtypes(cfg, "layer_norm_scale_grad", DType::f32);
  const LayerNormRows r = rows_of(cfg, "layer_norm_scale_grad", cfg.inputs[1].shape);
  cpu::check_input_shape(cfg, "layer_norm_scale_grad", 0, "dY", cfg.inputs[1].shape);
  if (numel(cfg.outputs[0].shape) != r.n)
    fail(where_of(cfg), "layer_norm_scale_grad: output has {} elements, rows have {}", numel(cfg.outputs[0].shape), r.n);
  return r;
}

TransposeGeometry transpose_geometry(const KernelConfig& cfg) {
  constexpr size_t max_rank = 8;
  cpu::check_arity(cfg, "transpose", 1, 1, 1);
  const TensorDesc& x = cfg.inputs[0];
  if (cfg.outputs[0].dtype != x.dtype) fail(where_of(cfg), "transpose: input and output dtypes differ");
  TransposeGeometry g;
  g.elem_size = dtype_size(x.dtype);
  const size_t rank = x.shape.size();
  if (rank > max_rank) fail(where_of(cfg), "transpose: rank {} exceeds {}", rank, max_rank);
  std::vector<int64_t> perm = cfg.attrs.get_ints("perm");
  if (perm.empty())  // ONNX default: reverse the axes
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < static_cast<int64_t>(rank) && !seen[size_t(p)];
    if (valid) seen[size_t(p)] = true;
  }
  if (!valid) fail(where_of(cfg), "transpose: perm [{}] is not a permutation of {} axes", fmt::join(perm, ","), rank);
  Shape y(rank);
  for (size_t i = 0; i < rank; ++i) y[i] = x.shape[size_t(perm[i])];
  cpu::check_output_shape(cfg, "transpose", 0, y);
  g.total = numel(y);

  std::vector<int64_t> in_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * x.shape[i];
  // Walk output axes in order, dropping size-1 axes; merge an axis into the previous kept one
  // when the pair is contiguous in the input too (outer stride = inner stride * inner size).
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = x.shape[size_t(perm[i])], s = in_stride[size_t(perm[i])];
    if (d == 1) continue;
    if (!g.dims.empty() && g.in_strides.back() == s * d) {
      g.dims.back() *= d;
      g.in_strides.back() = s;
    } else {
      g.dims.push_back(d);
      g.in_strides.push_back(s);
    }
  }
  if (g.dims.empty()) {
    g.dims.push_back(1);
    g.in_strides.push_back(1);
  }
  return g;
}

PadSpace pad_space(const KernelConfig& cfg, bool grad) {
  const char* name = grad ? "pad_grad" : "pad";
  cpu::check_arity(cfg, name, 1, 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  // The unpadded and the padded tensor: X and Y, or dX (the output) and dY.
  const Shape& x = grad ? cfg.outputs[0].shape : cfg.inputs[0].shape;
  const Shape& y = grad ? cfg.inputs[0].shape : cfg.outputs[0].shape;
  const auto rank = int64_t(x.size());
  if (rank > PadSpace::kMaxRank) fail(where_of(cfg), "{}: rank {} exceeds {}", name, rank, PadSpace::kMaxRank);
  const std::vector<int64_t> pads = cfg.attrs.get_ints("pads");
  if (int64_t(pads.size()) != 2 * rank)
    fail(where_of(cfg), "{}: pads [{}] has {} entries, expected 2 x rank {} = {}", name, fmt::join(pads, ","), pads.size(), rank, 2 * rank);
  PadSpace s;
  s.rank = int(rank);
  const std::string mode = cfg.attrs.get_str("mode", "constant");
  if (mode == "constant") s.mode = PadMode::constant;
  else if (mode == "reflect") s.mode = PadMode::reflect;
  else if (mode == "edge") s.mode = PadMode::edge;
  else fail(where_of(cfg), "{}: mode '{}' is not constant, reflect or edge", name, mode);
  s.value = cfg.attrs.get_float("value", 0.0f);
  Shape padded(size_t(rank), 0);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t b = pads[size_t(d)], a = pads[size_t(d + rank)], n = x[size_t(d)];
    if (b < 0 || a < 0) fail(where_of(cfg), "{}: pads [{}] has a negative entry", name, fmt::join(pads, ","));
    if (s.mode == PadMode::reflect && (b >= n || a >= n) && (a > 0 || b > 0))
      fail(where_of(cfg), "{}: reflect pads {} and {} of axis {} must be below its size {}", name, b, a, d, n);
    if (s.mode == PadMode::edge && n == 0 && (a > 0 || b > 0))
      fail(where_of(cfg), "{}: edge pads axis {}, which is empty", name, d);
    s.in_dims[d] = n;
    s.before[d] = b;
    s.out_dims[d] = padded[size_t(d)] = b + n + a;
  }
  if (padded != y)
    fail(where_of(cfg), "{}: {} {} padded by [{}] is {}, not {}", name, grad ? "dX" : "X", shape_str(x), fmt::join(pads, ","),
         shape_str(padded), shape_str(y));
  return s;
}

ResizeSpace resize_space(const KernelConfig& cfg, bool grad) {
  const char* name = grad ? "resize_grad" : "resize";
  cpu::check_arity(cfg, name, 1, 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  const Shape& x = grad ? cfg.outputs[0].shape : cfg.inputs[0].shape;
  const Shape& y = grad ? cfg.inputs[0].shape : cfg.outputs[0].shape;
  if ((x.size() != 3 && x.size() != 4) || y.size() != x.size() || y[0] != x[0] || y[1] != x[1])
    fail(where_of(cfg), "{}: X {} and Y {} must be [N,C,H,W] or [N,C,L] with the same N and C", name, shape_str(x), shape_str(y));
  ResizeSpace s;
  s.planes = x[0] * x[1];
  const bool one_d = x.size() == 3;
  s.in_h = one_d ? 1 : x[2];
  s.out_h = one_d ? 1 : y[2];
  s.in_w = x.back();
  s.out_w = y.back();
  const std::vector<float> scales = cfg.attrs.get_floats("scales");
  if (scales.size() != x.size() - 2)
    fail(where_of(cfg), "{}: scales has {} values, expected {}", name, scales.size(), x.size() - 2);
  for (float f : scales)
    if (!(f > 0.0f) || !std::isfinite(f)) fail(where_of(cfg), "{}: scale {} is not positive and finite", name, f);
  s.scale_h = one_d ? 1.0f : scales[0];
  s.scale_w = scales.back();
  if ((s.in_h == 0 || s.in_w == 0) && s.out_h * s.out_w > 0) fail(where_of(cfg), "{}: X {} has no positions to read", name, shape_str(x));
  const std::string mode = cfg.attrs.get_str("mode", "nearest"), coord = cfg.attrs.get_str("coord", "half_pixel"),
                    round = cfg.attrs.get_str("nearest_mode", "round_prefer_floor");
  if (mode == "nearest") s.mode = ResizeMode::nearest;
  else if (mode == "linear") s.mode = ResizeMode::linear;
  else if (mode == "cubic") s.mode = ResizeMode::cubic;
  else fail(where_of(cfg), "{}: mode '{}' is not nearest, linear or cubic", name, mode);
  s.cubic_a = cfg.attrs.get_float("cubic_coeff_a", -0.75f);
  if (!std::isfinite(s.cubic_a)) fail(where_of(cfg), "{}: cubic_coeff_a {} is not finite", name, s.cubic_a);
  if (coord == "asymmetric") s.coord = ResizeCoord::asymmetric;
  else if (coord == "half_pixel") s.coord = ResizeCoord::half_pixel;
  else if (coord == "pytorch_half_pixel") s.coord = ResizeCoord::pytorch_half_pixel;
  else if (coord == "align_corners") s.coord = ResizeCoord::align_corners;
  else fail(where_of(cfg), "{}: coordinate transformation '{}' is not supported", name, coord);
  if (round == "floor") s.round = ResizeRound::floor;
  else if (round == "ceil") s.round = ResizeRound::ceil;
  else if (round == "round_prefer_floor") s.round = ResizeRound::round_prefer_floor;
  else if (round == "round_prefer_ceil") s.round = ResizeRound::round_prefer_ceil;
  else fail(where_of(cfg), "{}: nearest_mode '{}' is not supported", name, round);
  return s;
}

StridedSliceGeometry strided_slice_geometry(const KernelConfig& cfg, bool grad) {
  const char* name = grad ? "strided_slice_grad" : "strided_slice";
  cpu::check_arity(cfg, name, 1, 1, 1);
  if (cfg.outputs[0].dtype != cfg.inputs[0].dtype)
    fail(where_of(cfg), "{}: output dtype {} differs from the input's {}", name, dtype_name(cfg.outputs[0].dtype), dtype_name(cfg.inputs[0].dtype));
  const Shape& x = grad ? cfg.outputs[0].shape : cfg.inputs[0].shape;
  const Shape& y = grad ? cfg.inputs[0].shape : cfg.outputs[0].shape;
  const auto rank = int64_t(x.size());
  if (rank > 8) fail(where_of(cfg), "{}: rank {} exceeds 8", name, rank);
  const std::vector<int64_t> starts = cfg.attrs.get_ints("starts"), steps = cfg.attrs.get_ints("steps");
  if (int64_t(y.size()) != rank || int64_t(starts.size()) != rank || int64_t(steps.size()) != rank)
    fail(where_of(cfg), "{}: starts [{}] and steps [{}] must name every axis of {} (sliced to {})", name, fmt::join(starts, ","),
         fmt::join(steps, ","), shape_str(x), shape_str(y));
  StridedSliceGeometry g;
  g.elem_size = dtype_size(cfg.inputs[0].dtype);
  g.total = numel(y);
  int64_t stride = 1;
  g.dims.assign(size_t(rank), 0);
  g.in_strides.assign(size_t(rank), 0);
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t s = starts[size_t(d)], st = steps[size_t(d)], n = x[size_t(d)], count = y[size_t(d)];
    // A negative step walks back from s (torch.flip, x[::-1] in ONNX): the last element taken,
    // s + (count - 1) st, must still be at 0 or after.
    // (A step below -n - 1 is refused first: it takes one element like -n does, and -st must
    // not overflow.)
    const bool step_ok = st != 0 && st >= -n - 1;
    const bool fits = step_ok && (st > 0 ? (count - 1) <= (n - 1 - s) / st : (count - 1) <= s / -st);
    if (!step_ok || s < 0 || count < 0 || (count > 0 && (s >= n || !fits)))
      fail(where_of(cfg), "{}: {} elements from {} in steps of {} do not fit axis {} of {}", name, count, s, st, d, shape_str(x));
    g.dims[size_t(d)] = count;
    g.in_strides[size_t(d)] = stride * st;
    g.offset += stride * s;
    stride *= n;
  }
  return g;
}

SliceGeometry slice_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "slice", 1, 1, 1);
  const Shape& x = cfg.inputs[0].shape;
  const Shape& y = cfg.outputs[0].shape;
  if (cfg.outputs[0].dtype != cfg.inputs[0].dtype)
    fail(where_of(cfg), "slice: output dtype {} differs from the input's {}", dtype_name(cfg.outputs[0].dtype), dtype_name(cfg.inputs[0].dtype));
  const int64_t rank = int64_t(x.size());
  const int64_t axis = cfg.attrs.get_int("axis", -1);
  const int64_t start = cfg.attrs.get_int("start", -1);
  if (axis < 0 || axis >= rank || int64_t(y.size()) != rank)
    fail(where_of(cfg), "slice: axis {} does not fit input {} and output {}", axis, shape_str(x), shape_str(y));
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis && x[size_t(k)] != y[size_t(k)])
      fail(where_of(cfg), "slice: output {} differs from input {} off axis {}", shape_str(y), shape_str(x), axis);
  if (start < 0 || start > x[size_t(axis)] || y[size_t(axis)] > x[size_t(axis)] - start)
    fail(where_of(cfg), "slice: [{}, +{}) is outside axis {} of {}", start, y[size_t(axis)], axis, shape_str(x));
  SliceGeometry g;
  size_t inner = size_t(dtype_size(cfg.inputs[0].dtype));
  for (int64_t k = axis + 1; k < rank; ++k) inner *= size_t(x[size_t(k)]);
  for (int64_t k = 0; k < axis; ++k) g.outer *= x[size_t(k)];
  g.in_row = inner * size_t(x[size_t(axis)]);
  g.out_row = inner * size_t(y[size_t(axis)]);
  g.offset = inner * size_t(start);
  return g;
}

float pointwise_float_attr(const KernelConfig& cfg, const char* kernel, const char* attr, float fallback) {
  const float v = cfg.attrs.get_float(attr, fallback);
  if (std::isnan(v)) fail(where_of(cfg), "{}: attribute '{}' is NaN", kernel, attr);
  return v;
}

float pow_exponent(const KernelConfig& cfg, const char* kernel) {
  const Attr* a = cfg.attrs.find("exponent");
  if (!a || a->floats.size() != 1) fail(where_of(cfg), "{}: attribute 'exponent' (one float) is required", kernel);
  if (!std::isfinite(a->floats[0])) fail(where_of(cfg), "{}: exponent {} is not finite", kernel, a->floats[0]);
  return a->floats[0];
}

std::pair<float, float> clip_bounds(const KernelConfig& cfg, const char* kernel) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  return {pointwise_float_attr(cfg, kernel, "min", -inf), pointwise_float_attr(cfg, kernel, "max", inf)};
}

namespace {

// Checks X's rank and that inputs [first, last] are [C] vectors (`names` index by input).
ChannelView channel_view(const KernelConfig& cfg, const char* kernel, int x_index, int first, int last, const char* const* names) {
  const Shape& x = cfg.inputs[size_t(x_index)].shape;
  if (x.size() < 2) fail(where_of(cfg), "{}: X {} needs rank >= 2", kernel, shape_str(x));
  ChannelView v;
  v.n = x[0];
  v.c = x[1];
  for (size_t i = 2; i < x.size(); ++i) v.inner *= x[i];
  for (int i = first; i <= last; ++i) cpu::check_input_shape(cfg, kernel, i, names[i], Shape{v.c});
  return v;
}

// PyTorch refuses this too: the unbiased variance would divide by m - 1 = 0.
void check_values_per_channel(const KernelConfig& cfg, const char* kernel, const ChannelView& v) {
  if (v.m() < 2)
    fail(where_of(cfg), "{}: X {} has {} values per channel, needs more than 1", kernel, shape_str(cfg.inputs[0].shape), v.m());
}

double epsilon_of(const KernelConfig& cfg, const char* kernel) {
  const double e = cfg.attrs.get_float("epsilon", 1e-5f);
  if (!(e >= 0) || !std::isfinite(e)) fail(where_of(cfg), "{}: epsilon {} must be finite and >= 0", kernel, e);
  return e;
}

}  // namespace

std::pair<ChannelView, double> batch_norm_stats_config(const KernelConfig& cfg, const char* kernel) {
  const bool train = std::string_view(kernel) == "batch_norm_train";
  cpu::check_arity(cfg, kernel, train ? 3 : 1, train ? 3 : 1, train ? 4 : 3);
  cpu::check_dtypes(cfg, kernel, DType::f32);
  static const char* const names[] = {"x", "scale", "bias"};
  const ChannelView v = channel_view(cfg, kernel, 0, 1, train ? 2 : 0, names);
  check_values_per_channel(cfg, kernel, v);
  if (train) cpu::check_output_shape(cfg, kernel, 0, cfg.inputs[0].shape);
  for (int i = train ? 1 : 0; i < (train ? 4 : 3); ++i) cpu::check_output_shape(cfg, kernel, i, Shape{v.c});
  return {v, epsilon_of(cfg, kernel)};
}

std::pair<ChannelView, bool> batch_norm_apply_config(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "batch_norm_apply", 5, 5, 1);
  cpu::check_dtypes(cfg, "batch_norm_apply", DType::f32);
  static const char* const names[] = {"x", "scale", "bias", "saved_mean", "saved_invstd"};
  const ChannelView v = channel_view(cfg, "batch_norm_apply", 0, 1, 4, names);
  cpu::check_output_shape(cfg, "batch_norm_apply", 0, cfg.inputs[0].shape);
  const std::string act = cfg.attrs.get_str("activation", "");
  if (!act.empty() && act != "relu") fail(where_of(cfg), "batch_norm_apply: activation '{}' is not relu", act);
  return {v, act == "relu"};
}

ChannelView batch_norm_train_grad_config(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "batch_norm_train_grad", 5, 5, 3);
  cpu::check_dtypes(cfg, "batch_norm_train_grad", DType::f32);
  static const char* const names[] = {"dy", "x", "scale", "saved_mean", "saved_invstd"};
  const ChannelView v = channel_view(cfg, "batch_norm_train_grad", 1, 2, 4, names);
  cpu::check_input_shape(cfg, "batch_norm_train_grad", 0, "dy", cfg.inputs[1].shape);
  cpu::check_output_shape(cfg, "batch_norm_train_grad", 0, cfg.inputs[1].shape);
  cpu::check_output_shape(cfg, "batch_norm_train_grad", 1, Shape{v.c});
  cpu::check_output_shape(cfg, "batch_norm_train_grad", 2, Shape{v.c});
  return v;
}

BatchNormStatsUpdateGeometry batch_norm_stats_update_config(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "batch_norm_stats_update", 5, int(3 + 2 * kMaxBatchNormCalls), 3);
  if (cfg.inputs.size() % 2 == 0)
    fail(where_of(cfg), "batch_norm_stats_update: {} inputs are not (mean, variance) pairs and three running statistics", cfg.inputs.size());
  const auto calls = int64_t(cfg.inputs.size() - 3) / 2;
  const int count_input = int(2 * calls + 2);
  const int64_t c = cfg.inputs[0].shape.size() == 1 ? cfg.inputs[0].shape[0] : -1;
  if (c < 0) fail(where_of(cfg), "batch_norm_stats_update: input 0 {} is not [C]", shape_str(cfg.inputs[0].shape));
  for (int i = 0; i < count_input; ++i) {
    cpu::check_input_shape(cfg, "batch_norm_stats_update", i, "statistic", Shape{c});
    if (cfg.inputs[size_t(i)].dtype != DType::f32) fail(where_of(cfg), "batch_norm_stats_update: input {} is not f32", i);
  }
  if (cfg.inputs[size_t(count_input)].dtype != DType::i64 || numel(cfg.inputs[size_t(count_input)].shape) != 1)
    fail(where_of(cfg), "batch_norm_stats_update: input {} (num_batches_tracked) must be one i64", count_input);
  cpu::check_output_shape(cfg, "batch_norm_stats_update", 0, Shape{c});
  cpu::check_output_shape(cfg, "batch_norm_stats_update", 1, Shape{c});
  if (cfg.outputs[2].dtype != DType::i64 || numel(cfg.outputs[2].shape) != 1)
    fail(where_of(cfg), "batch_norm_stats_update: output 2 (num_batches_tracked) must be one i64");
  const double momentum = cfg.attrs.get_float("momentum", 0.1f);
  if (!std::isfinite(momentum)) fail(where_of(cfg), "batch_norm_stats_update: momentum {} is not finite", momentum);
  const int64_t cumulative = cfg.attrs.get_int("cumulative", 0);
  if (cumulative != 0 && cumulative != 1) fail(where_of(cfg), "batch_norm_stats_update: cumulative is {}, not 0 or 1", cumulative);
  return {.channels = c, .calls = calls, .momentum = momentum, .cumulative = cumulative == 1};
}

std::pair<ChannelView, float> batch_norm_config(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "batch_norm", 5, 5, 1);
  cpu::check_dtypes(cfg, "batch_norm", DType::f32);
  const Shape& x = cfg.inputs[0].shape;
  if (x.size() < 2) fail(where_of(cfg), "batch_norm: X {} needs rank >= 2", shape_str(x));
  ChannelView v;
  v.n = x[0];
  v.c = x[1];
  for (size_t i = 2; i < x.size(); ++i) v.inner *= x[i];
  static const char* const names[] = {"", "scale", "B", "mean", "var"};
  for (int i = 1; i < 5; ++i)
    if (cfg.inputs[size_t(i)].shape != Shape{v.c})
      fail(where_of(cfg), "batch_norm: {} has shape {}, expected [{}]", names[i], shape_str(cfg.inputs[size_t(i)].shape), v.c);
  cpu::check_output_shape(cfg, "batch_norm", 0, x);
  return {v, cfg.attrs.get_float("epsilon", 1e-5f)};
}

std::pair<int64_t, int64_t> global_average_pool_config(const KernelConfig& cfg, bool grad) {
  const char* name = grad ? "global_average_pool_grad" : "global_average_pool";
  cpu::check_arity(cfg, name, 1, 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  const Shape& x = grad ? cfg.outputs[0].shape : cfg.inputs[0].shape;
  if (x.size() < 3) fail(where_of(cfg), "{}: {} {} needs rank >= 3", name, grad ? "dX" : "X", shape_str(x));
  Shape y(x.size(), 1);
  y[0] = x[0];
  y[1] = x[1];
  if (grad) cpu::check_input_shape(cfg, name, 0, "dy", y);
  else cpu::check_output_shape(cfg, name, 0, y);
  const int64_t planes = x[0] * x[1];
  return {planes, numel(x) / std::max<int64_t>(1, planes)};
}

DropoutGeometry dropout_geometry(const KernelConfig& cfg, const char* name) {
  cpu::check_arity(cfg, name, 1, 1, 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
  DropoutGeometry g;
  g.n = numel(cfg.inputs[0].shape);
  const float ratio = cfg.attrs.get_float("ratio", -1.0f);
  if (!(ratio > 0.0f && ratio < 1.0f)) fail(where_of(cfg), "{}: ratio {} is outside (0, 1)", name, ratio);
  g.offset = cfg.attrs.get_int("offset", 0);
  if (g.offset < 0) fail(where_of(cfg), "{}: offset {} is negative", name, g.offset);
  g.stream = uint32_t(cfg.attrs.get_int("stream", 0));
  // An element is kept when its 24-bit uniform is at least the ratio (ratio < 1: some survive).
  g.threshold = uint32_t(std::ceil(double(ratio) * double(1u << 24)));
  g.scale = 1.0f / (1.0f - ratio);
  return g;
}

bool broadcasts_to(const Shape& x, const Shape& y) {
  if (x.size() > y.size()) return false;
  const size_t off = y.size() - x.size();
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != 1 && x[i] != y[i + off]) return false;
  return true;
}

std::pair<int64_t, double> mse_loss_config(const KernelConfig& cfg, bool grad) {
  if (!grad) {
    cpu::check_arity(cfg, "mse_loss", 2, 2, 1);
    cpu::check_dtypes(cfg, "mse_loss", DType::f32);
    cpu::check_input_shape(cfg, "mse_loss", 1, "target", cfg.inputs[0].shape);
    cpu::check_output_shape(cfg, "mse_loss", 0, {});
    const int64_t n = numel(cfg.inputs[0].shape);
    return {n, loss_denominator(cfg, n)};
  }
  cpu::check_arity(cfg, "mse_loss_grad", 3, 3, 1);
  cpu::check_dtypes(cfg, "mse_loss_grad", DType::f32);
  if (numel(cfg.inputs[0].shape) != 1 || cfg.inputs[0].shape.size() > 1)
    fail(where_of(cfg), "mse_loss_grad: dloss {} must be a scalar", shape_str(cfg.inputs[0].shape));
  cpu::check_input_shape(cfg, "mse_loss_grad", 2, "target", cfg.inputs[1].shape);
  cpu::check_output_shape(cfg, "mse_loss_grad", 0, cfg.inputs[1].shape);
  const int64_t n = numel(cfg.inputs[1].shape);
  return {n, loss_denominator(cfg, std::max<int64_t>(n, 1))};
}

size_t assign_bytes(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "assign", 2, 2, 1);
  cpu::check_dtypes(cfg, "assign", DType::f32);
  cpu::check_input_shape(cfg, "assign", 1, "value", cfg.inputs[0].shape);
  cpu::check_output_shape(cfg, "assign", 0, cfg.inputs[0].shape);
  return size_t(cfg.inputs[0].bytes());
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t a = shape.size(); a-- > 1;) st[a - 1] = st[a] * shape[a];
  return st;
}

std::vector<CollectiveBox> collective_boxes(const KernelConfig& cfg) {
  constexpr std::string_view kName = "collective_part";
  if (cfg.inputs.empty() || cfg.outputs.size() != 1)
    fail(where_of(cfg), "{}: expected >= 1 inputs and 1 output, got {} and {}", kName, cfg.inputs.size(), cfg.outputs.size());
  const TensorDesc& y = cfg.outputs[0];
  for (size_t k = 0; k < cfg.inputs.size(); ++k)
    if (cfg.inputs[k].dtype != y.dtype || cfg.inputs[k].shape.size() != y.shape.size())
      fail(where_of(cfg), "{}: input {} ({} {}) does not match the output's dtype and rank ({} {})", kName, k,
           dtype_name(cfg.inputs[k].dtype), shape_str(cfg.inputs[k].shape), dtype_name(y.dtype), shape_str(y.shape));
  const size_t rank = y.shape.size();
  const std::vector<int64_t> pieces = cfg.attrs.get_ints("pieces");
  const size_t per = 2 + 3 * rank;
  if (pieces.empty() || pieces.size() % per != 0)
    fail(where_of(cfg), "{}: attribute 'pieces' has {} ints, not a positive multiple of {}", kName, pieces.size(), per);
  std::vector<CollectiveBox> boxes;
  int64_t summand = -1, covered = 0;
  std::vector<std::vector<int64_t>> lo, hi;  // the current summand's boxes in the output, to refuse overlaps
  for (size_t p = 0; p < pieces.size(); p += per) {
    const int64_t s = pieces[p];
    const int64_t input = pieces[p + 1];
    const int64_t* src = pieces.data() + p + 2;  // one past the end for a scalar: never read
    const int64_t* dst = src + rank;
    const int64_t* size = dst + rank;
    if (s < 0 || (s != summand && s != summand + 1))
      fail(where_of(cfg), "{}: box {} is of summand {} after summand {}; boxes go by summand from 0", kName, p / per, s, summand);
    if (s != summand) {
      if (summand >= 0 && covered != numel(y.shape))
        fail(where_of(cfg), "{}: summand {} covers {} of the output's {} elements", kName, summand, covered, numel(y.shape));
      if (s > 0 && y.dtype != DType::f32) fail(where_of(cfg), "{}: only f32 parts are summed, not {}", kName, dtype_name(y.dtype));
      summand = s;
      covered = 0;
      lo.clear();
      hi.clear();
    }
    if (input < 0 || size_t(input) >= cfg.inputs.size())
      fail(where_of(cfg), "{}: box {} reads input {} of {}", kName, p / per, input, cfg.inputs.size());
    const Shape& x = cfg.inputs[size_t(input)].shape;
    int64_t n = 1;
    for (size_t a = 0; a < rank; ++a) {
      if (size[a] < 0 || src[a] < 0 || dst[a] < 0 || src[a] > x[a] - size[a] || dst[a] > y.shape[a] - size[a])
        fail(where_of(cfg), "{}: box {} (axis {}: from {}, to {}, {} long) lies outside input {} or the output {}", kName, p / per,
             a, src[a], dst[a], size[a], shape_str(x), shape_str(y.shape));
      n *= size[a];
    }
    std::vector<int64_t> b(dst, dst + rank), e(rank);
    for (size_t a = 0; a < rank; ++a) e[a] = dst[a] + size[a];
    for (size_t o = 0; o < lo.size(); ++o) {
      bool overlap = n > 0;
      for (size_t a = 0; a < rank && overlap; ++a) overlap = b[a] < hi[o][a] && lo[o][a] < e[a];
      if (overlap) fail(where_of(cfg), "{}: box {} overlaps another box of summand {}", kName, p / per, s);
    }
    lo.push_back(b);
    hi.push_back(e);
    covered += n;
    boxes.push_back(CollectiveBox{.input = int32_t(input), .add = s > 0, .src = {src, src + rank}, .dst = {dst, dst + rank}, .size = {size, size + rank}});
  }
  if (covered != numel(y.shape))
    fail(where_of(cfg), "{}: summand {} covers {} of the output's {} elements", kName, summand, covered, numel(y.shape));
  return boxes;
}

}  // namespace of::kernels
