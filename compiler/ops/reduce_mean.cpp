// SPDX-License-Identifier: Apache-2.0
// ReduceMean (a LayerNorm written out below opset 17, a mean over the sequence): axes from the
// attribute (opsets 13-17) or a constant input (18); keepdims. Runs reduce_sum with a divisor.
#include <algorithm>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

std::vector<int64_t> mean_axes(OpCtx& c) {
  const auto rank = int64_t(c.in(0).shape.size());
  std::vector<int64_t> axes = c.has_in(1) ? c.const_ints(1) : c.attrs().get_ints("axes");
  if (axes.empty() && c.attrs().get_int("noop_with_empty_axes", 0) == 0)
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& a : axes) a = c.axis(a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("axes repeat an axis");
  return axes;
}

void infer_reduce_mean(OpCtx& c) {
  c.expect_arity(1, 2);
  c.expect_float(0);
  const std::vector<int64_t> axes = mean_axes(c);
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

void lower_reduce_mean(OpCtx& c) {
  const std::vector<int64_t> axes = mean_axes(c);
  int64_t n = 1;
  for (int64_t a : axes) n *= c.in(0).shape[size_t(a)];
  Attrs a;
  a.set_ints("axes", axes);
  a.set_int("keepdims", c.attrs().get_int("keepdims", 1) != 0 ? 1 : 0);
  a.set_float("divisor", n > 0 ? float(n) : 1.0f);
  c.set_kernel("reduce_sum", std::move(a));
  c.set_runtime_inputs({0});
}

// dX = dY (with the reduced axes kept as 1) broadcast to X's shape, divided by n.
void grad_reduce_mean(GradCtx& g) {
  if (!g.wants(0)) return;
  const TensorDesc x = g.desc(g.in(0));
  const std::vector<int64_t> axes = g.attrs().get_ints("axes");
  Shape kept = x.shape;
  for (int64_t a : axes) kept[size_t(a)] = 1;
  const ValueId dy = g.reshape(g.out_grad(0), kept);
  const ValueId wide = g.emit("ReduceMeanGrad", "expand", {dy}, {}, x);
  g.add_in_grad(0, g.emit("ReduceMeanGrad", "div", {wide, g.scalar(g.attrs().get_float("divisor", 1.0f))}, {}, x));
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

OpDef reduce_mean_def() { return {"ReduceMean", infer_reduce_mean, lower_reduce_mean, grad_reduce_mean,
          {bool_attr("keepdims"), bool_attr("noop_with_empty_axes"), ints_attr("axes", -kMaxAxis, kMaxAxis)},
          {sbp_rule("reduce_sum", reduce_sum_sbp)}}; }

}  // namespace of::compiler
