// SPDX-License-Identifier: Apache-2.0
// ConvTranspose (nn.ConvTranspose2d / 1d: upsampling in U-Nets, GANs and autoencoders): X
// [N,C,H,W], W [C,M/group,kH,kW], optional B [M] -> [N,M,oH,oW], oH = (H - 1) stride - pads +
// dilation (kH - 1) + output_padding + 1. It is the gradient of the convolution of its output
// with the same weight and attributes, so it runs on the conv kernels: forward conv_grad_data
// (with the bias), dX the convolution of dY, dW conv_grad_weight with X and dY in each other's
// places. 1-D as height 1, as Conv; 3-D (nn.ConvTranspose3d) with three axes of attributes.
#include <fmt/format.h>

#include "compiler/ops/ops.h"
#include "compiler/ops/window.h"

namespace of::compiler {
namespace {

struct TransposedWindow {
  std::vector<int64_t> strides, pads, dilations;  // 2-D (or 3-D), as the conv kernels take them
  Shape out;
};

TransposedWindow transposed_window(const OpCtx& c) {
  const Shape& x = c.in(0).shape;
  const Shape& w = c.in(1).shape;
  if (x.size() < 3 || x.size() > 5)
    c.fail("only 1-D, 2-D and 3-D transposed convolution is supported: input 0 has shape {}", shape_str(x));
  if (w.size() != x.size()) c.fail("input 1 (weight) has shape {}, expected rank {}", shape_str(w), x.size());
  const size_t axes = x.size() - 2;
  const int64_t group = c.attrs().get_int("group", 1);
  if (group < 1 || x[1] % group != 0) c.fail("input channels {} are not divisible by group {}", x[1], group);
  if (w[0] != x[1]) c.fail("input 1 (weight) has shape {}, expected [{},*,...] (the input's channels)", shape_str(w), x[1]);
  const int64_t m = w[1] * group;
  if (c.has_in(2) && c.in(2).shape != Shape{m}) c.fail("input 2 (bias) has shape {}, expected [{}]", shape_str(c.in(2).shape), m);
  const std::string auto_pad = c.attrs().get_str("auto_pad", "NOTSET");
  if (!auto_pad.empty() && auto_pad != "NOTSET") c.fail("attribute auto_pad = '{}' is not supported (only explicit pads)", auto_pad);
  if (c.attrs().has("output_shape")) c.fail("attribute output_shape is not supported (torch writes output_padding)");
  auto ints = [&](const char* name, size_t n, int64_t fallback, int64_t lo) {
    std::vector<int64_t> v = c.attrs().has(name) ? c.attrs().get_ints(name) : std::vector<int64_t>(n, fallback);
    if (v.size() != n) c.fail("attribute {} has {} values, expected {}", name, v.size(), n);
    for (int64_t e : v)
      if (e < lo) c.fail("attribute {} = [{}] must hold values >= {}", name, fmt::join(v, ","), lo);
    return v;
  };
  const std::vector<int64_t> s = ints("strides", axes, 1, 1), d = ints("dilations", axes, 1, 1), p = ints("pads", 2 * axes, 0, 0),
                             op = ints("output_padding", axes, 0, 0);
  const std::vector<int64_t> k(w.begin() + 2, w.end());
  if (c.attrs().has("kernel_shape") && c.attrs().get_ints("kernel_shape") != k)
    c.fail("attribute kernel_shape = [{}] does not match the weight's spatial shape [{}]", fmt::join(c.attrs().get_ints("kernel_shape"), ","),
           fmt::join(k, ","));
  TransposedWindow t;
  t.out = {x[0], m};
  for (size_t i = 0; i < axes; ++i) {
    // (torch also allows one below the dilation only; the conv kernels' shapes then disagree)
    if (op[i] >= s[i]) c.fail("output_padding {} must be below the stride {}", op[i], s[i]);
    const int64_t o = (x[2 + i] - 1) * s[i] - p[i] - p[i + axes] + d[i] * (k[i] - 1) + op[i] + 1;
    if (o < 1) c.fail("the output would have {} positions along axis {}", o, 2 + i);
    t.out.push_back(o);
  }
  if (axes == 1) {  // height 1, as the conv kernels run a 1-D window
    t.strides = {1, s[0]};
    t.dilations = {1, d[0]};
    t.pads = {0, p[0], 0, p[1]};
  } else {
    t.strides = s;
    t.dilations = d;
    t.pads = p;
  }
  return t;
}

void infer_conv_transpose(OpCtx& c) {
  c.expect_arity(2, 3);
  for (size_t i = 0; i < 3; ++i)
    if (c.has_in(i)) c.expect_float(i);
  c.out(0) = TensorDesc{transposed_window(c).out, DType::f32};
}

void lower_conv_transpose(OpCtx& c) {
  const TransposedWindow t = transposed_window(c);
  Attrs a;
  a.set_ints("strides", t.strides);
  a.set_ints("pads", t.pads);
  a.set_ints("dilations", t.dilations);
  a.set_int("group", c.attrs().get_int("group", 1));
  c.set_kernel("conv_grad_data", std::move(a));
}

// Y = conv_grad_data(X, W): dX = conv(dY, W), dW = conv_grad_weight(X, dY) (X is the
// convolution's dY, dY its input), dB the sum of dY over N and the positions.
void grad_conv_transpose(GradCtx& g) {
  const ValueId dy = g.out_grad(0), x = g.in(0), w = g.in(1);
  if (g.wants(0)) g.add_in_grad(0, g.emit("ConvTransposeGradData", "conv", {dy, w}, g.attrs(), g.desc(x)));
  if (g.wants(1)) g.add_in_grad(1, g.emit("ConvTransposeGradWeight", "conv_grad_weight", {x, dy}, g.attrs(), g.desc(w)));
  if (g.node().inputs.size() > 2 && g.in(2) != kNoValue && g.wants(2)) {
    Attrs a;
    a.set_ints("axes", batch_and_spatial_axes(g.desc(dy).shape.size()));
    a.set_int("keepdims", 0);
    g.add_in_grad(2, g.emit("ReduceSum", "reduce_sum", {dy}, std::move(a), g.desc(g.in(2))));
  }
}

}  // namespace

// The conv kernels' SBP rules are Conv's (listed there once).
OpDef conv_transpose_def() {
  return {"ConvTranspose", infer_conv_transpose, lower_conv_transpose, grad_conv_transpose,
          {int_attr("group", 1, kMaxDim), ints_attr("kernel_shape", 1, kMaxDim), ints_attr("strides", 1, kMaxDim),
           ints_attr("dilations", 1, kMaxDim), ints_attr("pads", 0, kMaxDim), ints_attr("output_padding", 0, kMaxDim)}};
}

}  // namespace of::compiler
