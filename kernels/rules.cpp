// SPDX-License-Identifier: Apache-2.0
#include "kernels/rules.h"

#include <algorithm>

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

ReduceGeometry reduce_geometry(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "reduce_sum", 1, 1, 1);
  cpu::check_dtypes(cfg, "reduce_sum", DType::f32);
  const Shape& x = cfg.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = cfg.attrs.get_ints("axes", {});
  if (!cfg.attrs.has("axes"))
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
      fail(where_of(cfg), "reduce_sum: axes must be sorted, distinct and in [0,{}) for X {}", rank, shape_str(x));
  const int64_t keepdims = cfg.attrs.get_int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1) fail(where_of(cfg), "reduce_sum: keepdims must be 0 or 1, got {}", keepdims);
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : axes) reduced[size_t(a)] = true;
  Shape y;
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[size_t(i)])
      y.push_back(x[size_t(i)]);
    else if (keepdims)
      y.push_back(1);
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
  cpu::check_arity(cfg, name, inputs, inputs, tensors - 1);
  cpu::check_dtypes(cfg, name, DType::f32);
  const Shape& p = cfg.inputs[0].shape;
  for (int i = 1; i < tensors; ++i) cpu::check_input_shape(cfg, name, i, names[size_t(i)], p);
  for (int i = tensors; i < inputs; ++i) {
    const Shape& s = cfg.inputs[size_t(i)].shape;
    if (numel(s) != 1 || s.size() > 1)
      fail(where_of(cfg), "{}: input {} ({}) has shape {}, expected a scalar []", name, i, names[size_t(i)], shape_str(s));
  }
  for (int i = 0; i < tensors - 1; ++i) cpu::check_output_shape(cfg, name, i, p);
  return numel(p);
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

double loss_denominator(const KernelConfig& cfg, int64_t n) {
  const float scale = cfg.attrs.get_float("scale", 1.0f);
  if (!(scale > 0.0f && scale <= 1.0f)) fail(where_of(cfg), "loss: scale {} must be in (0, 1]", scale);
  return static_cast<double>(n) / static_cast<double>(scale);
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

size_t copy_bytes(const KernelConfig& cfg) {
  cpu::check_arity(cfg, "copy", 1, 1, 1);
  const TensorDesc& x = cfg.inputs[0];
  const TensorDesc& y = cfg.outputs[0];
  if (x.dtype != y.dtype || numel(x.shape) != numel(y.shape))
    fail(where_of(cfg), "copy: input {} {} and output {} {} differ in dtype or size", dtype_name(x.dtype),
         shape_str(x.shape), dtype_name(y.dtype), shape_str(y.shape));
  return static_cast<size_t>(x.bytes());
}

}  // namespace of::kernels
