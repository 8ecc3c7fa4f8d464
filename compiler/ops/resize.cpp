// SPDX-License-Identifier: Apache-2.0
// Resize (nn.Upsample, F.interpolate in U-Nets, FPNs and generators): nearest, linear
// (bilinear on [N,C,H,W], linear on [N,C,L]) and cubic (bicubic, cubic_coeff_a) with the
// coordinate transformations torch exports (asymmetric for nearest, pytorch_half_pixel or
// align_corners for linear and cubic) and half_pixel; the output size from constant scales
// (floor(input x scale)) or sizes. Only H and W (or L) resize, and D, H and W of [N,C,D,H,W]
// (nn.Upsample(mode="trilinear" or "nearest") in 3-D U-Nets): a composite of two 2-D resizes, since
// each output's taps and weights are products of per-axis ones: over height and width with the
// depth folded into the channels ([N, C*D, H, W]), then over the depth, each slice's positions in
// one row ([N, C, D, oH*oW] at width scale 1, which reads each position with weight 1). Antialias,
// exclude_outside, axes and tf_crop_and_resize are refused by name.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/ops/ops.h"
#include "compiler/ops/window.h"

namespace of::compiler {
namespace {

struct ResizePlan {
  Shape out;
  std::vector<float> scales;  // per spatial axis: output over input
};

// A constant input that is present and not empty (the exporter writes empty roi and scales).
bool given(const OpCtx& c, size_t i) { return c.has_in(i) && numel(c.in(i).shape) > 0; }

ResizePlan resize_plan(OpCtx& c) {
  const Shape& x = c.in(0).shape;
  if (x.size() < 3 || x.size() > 5)
    c.fail("only 1-D, 2-D and 3-D resizing is supported: input 0 has shape {}, expected [N,C,L], [N,C,H,W] or [N,C,D,H,W]",
           shape_str(x));
  const std::string mode = c.attrs().get_str("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") c.fail("mode '{}' is not supported (nearest, linear and cubic are)", mode);
  if (x.size() == 5 && mode == "cubic") c.fail("mode 'cubic' is not supported in 3-D (torch has no tricubic either)");
  const std::string coord = c.attrs().get_str("coordinate_transformation_mode", "half_pixel");
  if (coord != "asymmetric" && coord != "half_pixel" && coord != "pytorch_half_pixel" && coord != "align_corners")
    c.fail("coordinate_transformation_mode '{}' is not supported", coord);
  if (c.attrs().get_int("antialias", 0) != 0) c.fail("antialias is not supported");
  if (c.attrs().has("axes")) c.fail("attribute axes is not supported (scales or sizes for every axis)");
  if (c.attrs().get_int("exclude_outside", 0) != 0) c.fail("exclude_outside is not supported");
  if (c.attrs().get_str("keep_aspect_ratio_policy", "stretch") != "stretch") c.fail("keep_aspect_ratio_policy other than stretch is not supported");
  const bool has_scales = given(c, 2), has_sizes = given(c, 3);
  if (has_scales == has_sizes) c.fail("exactly one of scales (input 2) and sizes (input 3) must be given");
  ResizePlan r;
  r.out = x;
  if (has_sizes) {
    const std::vector<int64_t> sizes = c.const_ints(3);
    if (sizes.size() != x.size()) c.fail("sizes [{}] has {} values for input 0 {}", fmt::join(sizes, ","), sizes.size(), shape_str(x));
    r.out = sizes;
  } else {
    const std::vector<uint8_t>* d = c.const_data(2);
    if (!d || c.in(2).dtype != DType::f32) c.fail("input 2 (scales) must be a constant f32 tensor");
    std::vector<float> scales(d->size() / 4);
    std::memcpy(scales.data(), d->data(), scales.size() * 4);
    if (scales.size() != x.size()) c.fail("scales has {} values for input 0 {}", scales.size(), shape_str(x));
    for (size_t i = 0; i < x.size(); ++i) {
      if (!(scales[i] > 0.0f) || !std::isfinite(scales[i])) c.fail("scale {} of axis {} is not positive and finite", scales[i], i);
      r.out[i] = int64_t(std::min(std::floor(double(x[i]) * double(scales[i])), 1e18));
      if (i >= 2) r.scales.push_back(scales[i]);
    }
  }
  if (r.out[0] != x[0] || r.out[1] != x[1]) c.fail("resizes the batch or channel axis ({} to {})", shape_str(x), shape_str(r.out));
  for (size_t i = 2; i < x.size(); ++i) {
    if (r.out[i] < 1 || x[i] < 1 || double(r.out[i]) > kMaxDim) c.fail("axis {} would resize from {} to {} positions", i, x[i], r.out[i]);
    if (has_sizes) r.scales.push_back(float(r.out[i]) / float(x[i]));
  }
  return r;
}

void infer_resize(OpCtx& c) {
  c.expect_arity(1, 4);
  c.expect_float(0);
  c.out(0) = TensorDesc{resize_plan(c).out, DType::f32};
}

void lower_resize(OpCtx& c) {
  const ResizePlan r = resize_plan(c);
  Attrs a;
  a.set_str("mode", c.attrs().get_str("mode", "nearest"));
  a.set_str("coord", c.attrs().get_str("coordinate_transformation_mode", "half_pixel"));
  a.set_str("nearest_mode", c.attrs().get_str("nearest_mode", "round_prefer_floor"));
  a.set_float("cubic_coeff_a", c.attrs().get_float("cubic_coeff_a", -0.75f));
  a.set_floats("scales", r.scales);
  c.set_kernel("resize", std::move(a));
  c.set_runtime_inputs({0});
}

bool resizes_3d(const OpCtx& c) { return c.in(0).shape.size() == 5; }

void expand_resize_3d(ExpandCtx& c) {
  const Shape x = c.shape(c.input(0)), y = c.shape(c.output(0));
  const std::vector<float> scales = c.node().kernel_attrs.get_floats("scales");  // D, H, W (lowered)
  // Sizes where the model gave sizes (the kernel's scale is then output over input, as here),
  // else its scales, whose floor(input x scale) gives the same sizes.
  const bool by_sizes = c.node().inputs.size() > 3 && c.node().inputs[3] != kNoValue && numel(c.shape(c.node().inputs[3])) > 0;
  auto stage = [&](ValueId in, const Shape& out, float scale_h, float scale_w) {
    return c.emit("Resize", by_sizes ? std::vector<ValueId>{in, kNoValue, kNoValue, c.ints(out)}
                                     : std::vector<ValueId>{in, kNoValue, c.floats({4}, {1.0f, 1.0f, scale_h, scale_w})},
                  c.attrs());
  };
  expand_by_planes_then_depth(
      c, [&](ValueId v) { return stage(v, {x[0], x[1] * x[2], y[3], y[4]}, scales[1], scales[2]); },
      [&](ValueId v) { return stage(v, {x[0], x[1], y[2], y[3] * y[4]}, scales[0], 1.0f); });
}

// dX: each dY element's share back at the taps that read it.
void grad_resize(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("ResizeGrad", "resize_grad", {g.out_grad(0)}, g.attrs(), g.desc(g.in(0))));
}

// Planes are independent: split along N or C.
void resize_sbp(const Graph&, const Node&, std::vector<Signature>& out) {
  for (int64_t d : {0, 1}) out.push_back(Signature{{Sbp::S(d)}, {Sbp::S(d)}, Signature::Tweak::none, true});
}

}  // namespace

OpDef resize_def() {
  OpDef d{"Resize", infer_resize, lower_resize, grad_resize, {}, {sbp_rule("resize", resize_sbp), sbp_rule("resize_grad", resize_sbp)}};
  d.expand = expand_resize_3d;
  d.expands = resizes_3d;
  return d;
}

}  // namespace of::compiler
