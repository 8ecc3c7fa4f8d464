// SPDX-License-Identifier: Apache-2.0
// ReduceMean (a LayerNorm written out below opset 17, a mean over the sequence), ReduceSum
// (x.sum(dim)) and ReduceMax (x.max(dim).values, torch.amax: a global max pooling): axes from the
// attribute (ReduceMean and ReduceMax below opset 18) or a constant input (ReduceSum from opset
// 13, the others from 18); keepdims; noop_with_empty_axes. ReduceMean and ReduceSum run
// reduce_sum, ReduceMean with a divisor; ReduceMax runs reduce_max, whose gradient goes to the
// first maximum (torch.max(dim)'s; torch.amax splits a tie evenly, which only ties can tell).
// ReduceL2 (torch.norm(dim), F.normalize) runs reduce_l2, its gradient x / y times dY, which is 0
// where the norm is 0, as torch.norm's (masked, not 0 / 0). Composites: ReduceMin (x.min(dim),
// torch.amin) is -ReduceMax(-x), exact, its gradient to the first minimum; ReduceLogSumExp
// (torch.logsumexp) is m + log(sum(exp(x - m))) with m the maximum (kept), as torch computes it.
// ArgMax (x.argmax(dim): a classifier's prediction as an output) runs argmax, i64, no gradient;
// ArgMin is ArgMax of the negation.
#include <algorithm>
#include <cfloat>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

std::vector<int64_t> reduced_axes(OpCtx& c) {
  const auto rank = int64_t(c.in(0).shape.size());
  std::vector<int64_t> axes = c.has_in(1) ? c.const_ints(1) : c.attrs().get_ints("axes");
  if (axes.empty() && c.attrs().get_int("noop_with_empty_axes", 0) == 0)
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& a : axes) a = c.axis(a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("axes repeat an axis");
  return axes;
}

void infer_reduce(OpCtx& c) {
  c.expect_arity(1, 2);
  c.expect_float(0);
  const std::vector<int64_t> axes = reduced_axes(c);
  const bool keep = c.attrs().get_int("keepdims", 1) != 0;
  Shape out;
  const Shape& x = c.in(0).shape;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (!reduced) out.push_back(x[i]);
    else if (keep) out.push_back(1);
  }
  c.out(0) = TensorDesc{out, DType::f32};
}

// The attributes every reduction kernel (and a composite's reductions) reads.
Attrs with_axes(std::vector<int64_t> axes, bool keep) {
  Attrs a;
  a.set_ints("axes", std::move(axes));
  a.set_int("keepdims", keep ? 1 : 0);
  return a;
}

// The node's reduced axes (sorted, non-negative) and keepdims, as with_axes gives them.
Attrs reduction_attrs(OpCtx& c) { return with_axes(reduced_axes(c), c.attrs().get_int("keepdims", 1) != 0); }

void lower_reduce(OpCtx& c, bool mean) {
  const std::vector<int64_t> axes = reduced_axes(c);
  int64_t n = 1;
  for (int64_t a : axes) n *= c.in(0).shape[size_t(a)];
  Attrs a = with_axes(axes, c.attrs().get_int("keepdims", 1) != 0);
  a.set_float("divisor", mean && n > 0 ? float(n) : 1.0f);
  c.set_kernel("reduce_sum", std::move(a));
  c.set_runtime_inputs({0});
}

void lower_reduce_mean(OpCtx& c) { lower_reduce(c, true); }
void lower_reduce_sum(OpCtx& c) { lower_reduce(c, false); }

// dX = dY (with the reduced axes kept as 1) broadcast to X's shape, divided by n for a mean.
void grad_reduce(GradCtx& g) {
  if (!g.wants(0)) return;
  const TensorDesc x = g.desc(g.in(0));
  const std::vector<int64_t> axes = g.attrs().get_ints("axes");
  Shape kept = x.shape;
  for (int64_t a : axes) kept[size_t(a)] = 1;
  const std::string op = g.node().op_type + "Grad";
  const ValueId dy = g.reshape(g.out_grad(0), kept);
  const ValueId wide = g.emit(op, "expand", {dy}, {}, x);
  const float divisor = g.attrs().get_float("divisor", 1.0f);
  g.add_in_grad(0, divisor == 1.0f ? wide : g.emit(op, "div", {wide, g.scalar(divisor)}, {}, x));
}

void lower_reduce_max(OpCtx& c) {
  c.set_kernel("reduce_max", reduction_attrs(c));
  c.set_runtime_inputs({0});
}

void lower_reduce_l2(OpCtx& c) {
  c.set_kernel("reduce_l2", reduction_attrs(c));
  c.set_runtime_inputs({0});
}

// dX = dY * X / Y, with the reduced axes kept as 1 in dY and Y (broadcast), and Y raised to
// FLT_MIN first: a norm of 0 has every X 0, so dX is 0 there (torch masks it) instead of 0 / 0;
// below FLT_MIN (every |X| is) the quotient stays within [-1, 1].
void grad_reduce_l2(GradCtx& g) {
  if (!g.wants(0)) return;
  const TensorDesc x = g.desc(g.in(0));
  Shape kept = x.shape;
  for (int64_t a : g.attrs().get_ints("axes")) kept[size_t(a)] = 1;
  const TensorDesc narrow{kept, DType::f32};
  const ValueId y = g.emit("ReduceL2Grad", "max", {g.reshape(g.out(0), kept), g.scalar(FLT_MIN)}, {}, narrow);
  const ValueId ratio = g.emit("ReduceL2Grad", "div", {g.in(0), y}, {}, x);
  g.add_in_grad(0, g.emit("ReduceL2Grad", "mul", {ratio, g.reshape(g.out_grad(0), kept)}, {}, x));
}

// A composite reduction's lower: its axes, sorted and non-negative, and keepdims, for expand().
void lower_composite_reduce(OpCtx& c) { c.node().kernel_attrs = reduction_attrs(c); }

// ReduceL1 = ReduceSum(|x|) (x.norm(p=1, dim), F.normalize(p=1)): Abs's gradient is torch's
// sign, 0 at 0. ReduceSumSquare = ReduceSum(x * x).
void expand_reduce_l1(ExpandCtx& c) {
  const Attrs& k = c.node().kernel_attrs;
  c.emit("ReduceSum", {c.emit("Abs", {c.input(0)})}, with_axes(k.get_ints("axes"), k.get_int("keepdims", 1) != 0), c.output(0));
}

void expand_reduce_sum_square(ExpandCtx& c) {
  const Attrs& k = c.node().kernel_attrs;
  c.emit("ReduceSum", {c.emit("Mul", {c.input(0), c.input(0)})}, with_axes(k.get_ints("axes"), k.get_int("keepdims", 1) != 0), c.output(0));
}

// ReduceMin = -ReduceMax(-x): negation is exact, so are the minimum and its gradient.
void expand_reduce_min(ExpandCtx& c) {
  const Attrs& k = c.node().kernel_attrs;
  const ValueId neg = c.emit("Neg", {c.input(0)});
  const ValueId max = c.emit("ReduceMax", {neg}, with_axes(k.get_ints("axes"), k.get_int("keepdims", 1) != 0));
  c.emit("Neg", {max}, {}, c.output(0));
}

// ReduceLogSumExp = m + log(sum(exp(x - m))), m the maximum over the axes (kept, to broadcast):
// torch.logsumexp's own form, finite for large x. The gradient reaches m along two paths that
// cancel, so x's is exp(x - y) dY, as torch's (to rounding).
void expand_reduce_log_sum_exp(ExpandCtx& c) {
  const Attrs& k = c.node().kernel_attrs;
  const std::vector<int64_t> axes = k.get_ints("axes");
  const bool keep = k.get_int("keepdims", 1) != 0;
  const ValueId m = c.emit("ReduceMax", {c.input(0)}, with_axes(axes, true));
  const ValueId e = c.emit("Exp", {c.emit("Sub", {c.input(0), m})});
  const ValueId log_sum = c.emit("Log", {c.emit("ReduceSum", {e}, with_axes(axes, true))});
  if (keep) {
    c.emit("Add", {log_sum, m}, {}, c.output(0));
    return;
  }
  const Shape out = c.shape(c.output(0));
  c.emit("Reshape", {c.emit("Add", {log_sum, m}), c.ints(std::vector<int64_t>(out.begin(), out.end()))}, {}, c.output(0));
}

void infer_reduce_max(OpCtx& c) {
  infer_reduce(c);
  for (int64_t a : reduced_axes(c))
    if (c.in(0).shape[size_t(a)] == 0)
      c.fail("axis {} of input 0 {} is empty: it has no {}", a, shape_str(c.in(0).shape),
             c.node().op_type == "ReduceMin" ? "minimum" : c.node().op_type == "ReduceMax" ? "maximum" : "largest element to subtract");
}

// dX: dY at each output's first maximum in X, zeros elsewhere.
void grad_reduce_max(GradCtx& g) {
  if (g.wants(0))
    g.add_in_grad(0, g.emit("ReduceMaxGrad", "reduce_max_grad", {g.out_grad(0), g.in(0), g.out(0)}, g.attrs(), g.desc(g.in(0))));
}

// reduce_max and its gradient, and reduce_l2: a kept axis splits (the maximum or norm of a part
// is the part's); a reduced one does not (a maximum or a norm is no sum of parts).
void reduce_max_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const bool grad = n.kernel == "reduce_max_grad";
  const Shape& x = sbp::shape_of(g, n.inputs[grad ? 1 : 0]);
  const std::vector<int64_t> axes = n.kernel_attrs.get_ints("axes");
  const bool keep = n.kernel_attrs.get_int("keepdims", 1) != 0;
  for (int64_t a = 0; a < int64_t(x.size()); ++a) {
    if (std::count(axes.begin(), axes.end(), a) > 0) continue;
    int64_t ya = a;
    if (!keep)
      for (int64_t r : axes) ya -= r < a ? 1 : 0;
    if (grad)
      out.push_back(Signature{{Sbp::S(ya), Sbp::S(a), Sbp::S(ya)}, {Sbp::S(a)}, Signature::Tweak::none, true});
    else
      out.push_back(Signature{{Sbp::S(a)}, {Sbp::S(ya)}, Signature::Tweak::none, true});
  }
}

// reduce_sum (ReduceMean's kernel, and every gradient that undoes a broadcast): a split of a
// reduced axis gives partial sums; a kept axis stays split; partial sums stay partial.
void reduce_sum_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  using Sig = Signature;
  const Shape& x = sbp::shape_of(g, n.inputs[0]);
  const std::vector<int64_t> axes = n.kernel_attrs.get_ints("axes");
  const bool keep = n.kernel_attrs.get_int("keepdims", 1) != 0;
  for (int64_t a = 0; a < int64_t(x.size()); ++a) {
    const bool reduced = axes.empty() || std::count(axes.begin(), axes.end(), a) > 0;
    if (reduced) {
      out.push_back(Sig{{Sbp::S(a)}, {Sbp::P()}, Sig::Tweak::none, true});
      continue;
    }
    int64_t ya = a;
    if (!keep)
      for (int64_t r : axes) ya -= r < a ? 1 : 0;
    out.push_back(Sig{{Sbp::S(a)}, {Sbp::S(ya)}, Sig::Tweak::none, true});
  }
  out.push_back(Sig{{Sbp::P()}, {Sbp::P()}, Sig::Tweak::none, true});
}

}  // namespace

OpDef reduce_mean_def() { return {"ReduceMean", infer_reduce, lower_reduce_mean, grad_reduce,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)},
          {sbp_rule("reduce_sum", reduce_sum_sbp)}}; }

OpDef reduce_max_def() { return {"ReduceMax", infer_reduce_max, lower_reduce_max, grad_reduce_max,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)},
          {sbp_rule("reduce_max", reduce_max_sbp), sbp_rule("reduce_max_grad", reduce_max_sbp)}}; }

OpDef reduce_l2_def() { return {"ReduceL2", infer_reduce, lower_reduce_l2, grad_reduce_l2,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)},
          {sbp_rule("reduce_l2", reduce_max_sbp)}}; }

namespace {

int64_t argmax_axis(OpCtx& c) { return c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size())); }

void infer_argmax(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  const Shape& x = c.in(0).shape;
  const char* what = c.node().op_type == "ArgMin" ? "minimum" : "maximum";
  if (x.empty()) c.fail("input 0 is a scalar: it has no axis to take the {} along", what);
  const int64_t a = argmax_axis(c);
  if (x[size_t(a)] == 0) c.fail("axis {} of input 0 {} is empty: it has no {}", a, shape_str(x), what);
  Shape out = x;
  if (c.attrs().get_int("keepdims", 1) != 0) out[size_t(a)] = 1;
  else out.erase(out.begin() + a);
  c.out(0) = TensorDesc{out, DType::i64};
}

void lower_argmax(OpCtx& c) {
  Attrs a = with_axes({argmax_axis(c)}, c.attrs().get_int("keepdims", 1) != 0);
  a.set_int("select_last_index", c.attrs().get_int("select_last_index", 0) != 0 ? 1 : 0);
  c.set_kernel("argmax", std::move(a));
}

// ArgMin (x.argmin(dim): VQ-VAE's nearest codebook entry) = ArgMax(-x): negation is exact, so the
// first minimum is the first maximum of -x (select_last_index alike).
void lower_argmin(OpCtx& c) {
  Attrs a;
  a.set_int("axis", argmax_axis(c));
  a.set_int("keepdims", c.attrs().get_int("keepdims", 1) != 0 ? 1 : 0);
  a.set_int("select_last_index", c.attrs().get_int("select_last_index", 0) != 0 ? 1 : 0);
  c.node().kernel_attrs = std::move(a);
}

void expand_argmin(ExpandCtx& c) { c.emit("ArgMax", {c.emit("Neg", {c.input(0)})}, c.node().kernel_attrs, c.output(0)); }

}  // namespace

OpDef argmin_def() {
  OpDef d{"ArgMin", infer_argmax, lower_argmin, nullptr,
          {int_attr("axis", -kMaxAxis, kMaxAxis), bool_attr("keepdims"), bool_attr("select_last_index")}};
  d.expand = expand_argmin;
  return d;
}

OpDef argmax_def() {
  return {"ArgMax", infer_argmax, lower_argmax, nullptr,
          {int_attr("axis", -kMaxAxis, kMaxAxis), bool_attr("keepdims"), bool_attr("select_last_index")},
          {sbp_rule("argmax", reduce_max_sbp)}};
}

OpDef reduce_min_def() {
  OpDef d{"ReduceMin", infer_reduce_max, lower_composite_reduce, nullptr,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)}};
  d.expand = expand_reduce_min;
  return d;
}

OpDef reduce_l1_def() {
  OpDef d{"ReduceL1", infer_reduce, lower_composite_reduce, nullptr,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)}};
  d.expand = expand_reduce_l1;
  return d;
}

OpDef reduce_sum_square_def() {
  OpDef d{"ReduceSumSquare", infer_reduce, lower_composite_reduce, nullptr,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)}};
  d.expand = expand_reduce_sum_square;
  return d;
}

OpDef reduce_log_sum_exp_def() {
  OpDef d{"ReduceLogSumExp", infer_reduce_max, lower_composite_reduce, nullptr,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)}};
  d.expand = expand_reduce_log_sum_exp;
  return d;
}

// reduce_sum's SBP rule is ReduceMean's (listed there once).
OpDef reduce_sum_def() { return {"ReduceSum", infer_reduce, lower_reduce_sum, grad_reduce,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)}}; }

}  // namespace of::compiler
