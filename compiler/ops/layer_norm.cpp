// SPDX-License-Identifier: Apache-2.0
// LayerNormalization (opset 17): each row of the trailing dims from `axis` on is normalized to
// zero mean and unit variance, then scaled and shifted: Y = (X - mean) / sqrt(var + eps) * Scale + B.
// Only Y is supported (the optional Mean and InvStdDev outputs are what torch does not export).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

int64_t norm_axis(const OpCtx& c) {
  return c.axis(c.attrs().get_int("axis", -1), int64_t(c.in(0).shape.size()), "attribute axis");
}

void infer_layer_norm(OpCtx& c) {
  c.expect_arity(2, 3, 3);
  for (size_t i = 1; i < c.num_outputs(); ++i)
    if (c.node().outputs[i] != kNoValue) c.fail("only output Y is supported (not Mean or InvStdDev)");
  c.expect_float(0);
  const Shape& x = c.in(0).shape;
  const Shape tail(x.begin() + norm_axis(c), x.end());
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    if (!c.has_in(i)) continue;
    c.expect_float(i);
    if (c.in(i).shape != tail)
      c.fail("input {} ({}) has shape {}, expected {} (input 0's dims from axis {})", i, i == 1 ? "Scale" : "B",
             shape_str(c.in(i).shape), shape_str(tail), norm_axis(c));
  }
  c.out(0) = c.in(0);
}

Attrs kernel_attrs(const OpCtx& c) {
  Attrs a;
  a.set_int("axis", norm_axis(c));
  a.set_float("epsilon", c.attrs().get_float("epsilon", 1e-5f));
  return a;
}

void lower_layer_norm(OpCtx& c) { c.set_kernel("layer_norm", kernel_attrs(c)); }

// dX from (dY, X, Scale); dScale = sum over rows of dY * xhat; dB = sum over rows of dY.
void grad_layer_norm(GradCtx& g) {
  const ValueId dy = g.out_grad(0), x = g.in(0);
  if (g.wants(0)) g.add_in_grad(0, g.emit("LayerNormGrad", "layer_norm_grad", {dy, x, g.in(1)}, g.attrs(), g.desc(x)));
  if (g.wants(1)) g.add_in_grad(1, g.emit("LayerNormScaleGrad", "layer_norm_scale_grad", {dy, x}, g.attrs(), g.desc(g.in(1))));
  if (g.node().inputs.size() > 2 && g.in(2) != kNoValue && g.wants(2)) g.add_in_grad(2, g.unbroadcast(dy, g.desc(g.in(2)).shape));
}

// Rows (the axes before `axis`) are normalized alone: any of those axes splits X, dY and dX
// (scale and bias whole); the scale's gradient sums over rows, so split rows give partial sums.
// On the data-parallel level only, for now: on a tensor-parallel level the greedy choice takes a
// row split (cheap here) and then pays a reduce-scatter at every matmul after it, where
// Megatron's layout gathers once (what a strategy search that looks ahead would see; issue 13).
void rows_sbp(const Graph& g, const Node& n, std::vector<Signature>& out, bool partial) {
  const Shape& x = sbp::shape_of(g, n.inputs[0]);
  const int64_t axis = n.kernel_attrs.get_int("axis", -1);
  const bool with_dy = n.kernel != "layer_norm";  // the gradients read (dY, X, ...)
  for (int64_t a = 0; a < axis && a < int64_t(x.size()); ++a) {
    if (x[size_t(a)] <= 1) continue;
    std::vector<Sbp> in = {Sbp::S(a)};
    if (with_dy) in.push_back(Sbp::S(a));
    out.push_back(Signature{in, {partial ? Sbp::P() : Sbp::S(a)}, Signature::Tweak::none, true, true});
  }
}

}  // namespace

OpDef layer_norm_def() { return {"LayerNormalization", infer_layer_norm, lower_layer_norm, grad_layer_norm,
          {int_attr("axis", -kMaxAxis, kMaxAxis), real_attr("epsilon", 0)},
          {sbp_rule("layer_norm", [](const Graph& g, const Node& n, std::vector<Signature>& out) { rows_sbp(g, n, out, false); }),
           sbp_rule("layer_norm_grad", [](const Graph& g, const Node& n, std::vector<Signature>& out) { rows_sbp(g, n, out, false); }),
           sbp_rule("layer_norm_scale_grad", [](const Graph& g, const Node& n, std::vector<Signature>& out) { rows_sbp(g, n, out, true); })}}; }

}  // namespace of::compiler
