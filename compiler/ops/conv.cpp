// SPDX-License-Identifier: Apache-2.0
// Conv over 1, 2 or 3 spatial axes (nn.Conv1d/2d/3d): X [N,C,spatial...], W [M,C/group,k...],
// optional B [M] -> [N,M,out...], with auto_pad resolved into explicit pads for the kernel.
#include <fmt/format.h>

#include "compiler/ops/ops.h"
#include "compiler/ops/window.h"

namespace of::compiler {
namespace {

Window conv_window(const OpCtx& c) {
  const Shape& x = c.in(0).shape;
  const Shape& w = c.in(1).shape;
  int64_t group = c.attrs().get_int("group", 1);
  if (group < 1) c.fail("attribute group = {} must be >= 1", group);
  if (w.size() != x.size())
    c.fail("input 1 (weight) has shape {}, expected rank {} [M,C/group,kernel...]", shape_str(w), x.size());
  if (x[1] % group != 0) c.fail("input channels {} are not divisible by group {}", x[1], group);
  if (w[1] != x[1] / group)
    c.fail("input 1 (weight) has shape {}, expected [*,{},...] (input channels {} / group {})", shape_str(w),
           x[1] / group, x[1], group);
  if (w[0] % group != 0) c.fail("input 1 (weight) has {} output channels, not divisible by group {}", w[0], group);
  if (c.has_in(2) && c.in(2).shape != Shape{w[0]})
    c.fail("input 2 (bias) has shape {}, expected [{}]", shape_str(c.in(2).shape), w[0]);
  const std::vector<int64_t> spatial(w.begin() + 2, w.end());
  if (c.attrs().has("kernel_shape") && c.attrs().get_ints("kernel_shape") != spatial)
    c.fail("attribute kernel_shape = [{}] does not match the weight's spatial shape [{}]",
           fmt::join(c.attrs().get_ints("kernel_shape"), ","), fmt::join(spatial, ","));
  return window_of(c, x, spatial, false);
}

void infer_conv(OpCtx& c) {
  c.expect_arity(2, 3);
  for (size_t i = 0; i < 3; ++i)
    if (c.has_in(i)) c.expect_float(i);
  expect_spatial_rank(c, "convolution");
  Window win = conv_window(c);
  c.out(0) = TensorDesc{window_output(c.in(0).shape, c.in(1).shape[0], win), DType::f32};
}

void lower_conv(OpCtx& c) {
  Window win = conv_window(c);
  Attrs a;
  a.set_ints("strides", win.strides_attr());
  a.set_ints("pads", win.pads_attr());
  a.set_ints("dilations", win.dilations_attr());
  a.set_int("group", c.attrs().get_int("group", 1));
  c.set_kernel("conv", std::move(a));
}

// dX and dW by the conv_grad kernels (same geometry attributes), db by summing dY over the batch
// and the spatial axes.
void grad_conv(GradCtx& g) {
  const ValueId dy = g.out_grad(0);
  if (g.wants(0)) g.add_in_grad(0, g.emit("ConvGradData", "conv_grad_data", {dy, g.in(1)}, g.attrs(), g.desc(g.in(0))));
  if (g.wants(1)) g.add_in_grad(1, g.emit("ConvGradWeight", "conv_grad_weight", {dy, g.in(0)}, g.attrs(), g.desc(g.in(1))));
  if (g.wants(2)) {
    Attrs a;
    a.set_ints("axes", batch_and_spatial_axes(g.desc(dy).shape.size()));
    a.set_int("keepdims", 0);
    g.add_in_grad(2, g.emit("ReduceSum", "reduce_sum", {dy}, std::move(a), g.desc(g.in(2))));
  }
}

}  // namespace

OpDef conv_def() { return {"Conv", infer_conv, lower_conv, grad_conv,
          {int_attr("group", 1, kMaxDim), ints_attr("kernel_shape", 1, kMaxDim), ints_attr("strides", 1, kMaxDim),
           ints_attr("dilations", 1, kMaxDim), ints_attr("pads", 0, kMaxDim)},
          // Images are independent: the forward and dX split the batch; dW sums over it (P).
          {sbp_rule("conv", [](const Graph&, const Node& n, std::vector<Signature>& out) {
             sbp::batch_rows(n, {true}, false, Signature::Tweak::none, out);
           }),
           sbp_rule("conv_grad_data", [](const Graph&, const Node& n, std::vector<Signature>& out) {
             sbp::batch_rows(n, {true, false}, false, Signature::Tweak::none, out);
           }),
           sbp_rule("conv_grad_weight", [](const Graph&, const Node& n, std::vector<Signature>& out) {
             sbp::batch_rows(n, {true, true}, true, Signature::Tweak::none, out);
           })}}; }

}  // namespace of::compiler
