// SPDX-License-Identifier: Apache-2.0
// InstanceNormalization: nn.InstanceNorm1d/2d (affine or not), and nn.GroupNorm, which torch
// exports as a Reshape to [N, groups, rest], an InstanceNormalization with a scale of ones and a
// bias of zeros, a Reshape back and the per-channel affine as Mul and Add. Each (n, c) row of the
// positions is normalized alone: Y = (X - mean) / sqrt(var + epsilon) * scale[c] + B[c].
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_instance_norm(OpCtx& c) {
  c.expect_arity(3, 3);
  for (size_t i = 0; i < 3; ++i) c.expect_float(i);
  const Shape& x = c.in(0).shape;
  if (x.size() < 3) c.fail("input 0 has shape {}, expected [N, C, ...] with at least one axis after C", shape_str(x));
  for (size_t i = 1; i < 3; ++i)
    if (c.in(i).shape != Shape{x[1]})
      c.fail("input {} ({}) has shape {}, expected [{}] (input 0's channels)", i, i == 1 ? "scale" : "B", shape_str(c.in(i).shape), x[1]);
  c.out(0) = c.in(0);
}

void lower_instance_norm(OpCtx& c) {
  Attrs a;
  a.set_float("epsilon", c.attrs().get_float("epsilon", 1e-5f));
  c.set_kernel("instance_norm", std::move(a));
}

// dX by instance_norm_grad (dY, X, scale); dscale = the sum over N and positions of dY xhat;
// dB = the sum of dY over N and positions.
void grad_instance_norm(GradCtx& g) {
  const ValueId dy = g.out_grad(0), x = g.in(0);
  if (g.wants(0)) g.add_in_grad(0, g.emit("InstanceNormGrad", "instance_norm_grad", {dy, x, g.in(1)}, g.attrs(), g.desc(x)));
  if (g.wants(1)) g.add_in_grad(1, g.emit("InstanceNormScaleGrad", "instance_norm_scale_grad", {dy, x}, g.attrs(), g.desc(g.in(1))));
  if (g.wants(2)) {
    std::vector<int64_t> axes{0};
    for (int64_t a = 2; a < int64_t(g.desc(x).shape.size()); ++a) axes.push_back(a);
    Attrs a;
    a.set_ints("axes", axes);
    a.set_int("keepdims", 0);
    g.add_in_grad(2, g.emit("ReduceSum", "reduce_sum", {dy}, std::move(a), g.desc(g.in(2))));
  }
}

// Samples are normalized alone: the batch splits X (and dY); scale and bias stay whole; the
// scale's gradient over a split batch is a partial sum.
void batch_sbp(const Node& n, std::vector<Signature>& out, size_t split_inputs, bool partial) {
  std::vector<Sbp> in(split_inputs, Sbp::S(0));
  in.resize(n.inputs.size(), Sbp::B());
  out.push_back(Signature{in, {partial ? Sbp::P() : Sbp::S(0)}, Signature::Tweak::none, true});
}

}  // namespace

OpDef instance_norm_def() {
  return {"InstanceNormalization", infer_instance_norm, lower_instance_norm, grad_instance_norm, {real_attr("epsilon", 0)},
          {sbp_rule("instance_norm", [](const Graph&, const Node& n, std::vector<Signature>& out) { batch_sbp(n, out, 1, false); }),
           sbp_rule("instance_norm_grad", [](const Graph&, const Node& n, std::vector<Signature>& out) { batch_sbp(n, out, 2, false); }),
           sbp_rule("instance_norm_scale_grad", [](const Graph&, const Node& n, std::vector<Signature>& out) { batch_sbp(n, out, 2, true); })}};
}

}  // namespace of::compiler
