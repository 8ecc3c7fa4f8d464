// SPDX-License-Identifier: Apache-2.0
// MaxPool and AveragePool (1-D, 2-D and 3-D, explicit or auto_pad pads, ceil_mode) and GlobalAveragePool.
#include <algorithm>

#include "compiler/ops/ops.h"
#include "compiler/ops/window.h"

namespace of::compiler {
namespace {

// Checks what both pooling ops share and returns the window; `what` names the op in messages.
Window pool_window(OpCtx& c, std::string_view what) {
  c.expect_float(0);
  const int axes = expect_spatial_rank(c, what);
  if (!c.attrs().has("kernel_shape")) c.fail("attribute kernel_shape is required");
  std::vector<int64_t> k = c.attrs().get_ints("kernel_shape");
  if (k.size() != size_t(axes)) c.fail("attribute kernel_shape has {} values, expected {}", k.size(), axes);
  int64_t ceil_mode = c.attrs().get_int("ceil_mode", 0);
  return window_of(c, c.in(0).shape, k, ceil_mode != 0);
}

void set_out(OpCtx& c, const Window& win) {
  c.out(0) = TensorDesc{window_output(c.in(0).shape, c.in(0).shape[1], win), DType::f32};
}

void check_max_pool(OpCtx& c) {
  c.expect_arity(1, 1, 2);
  if (c.num_outputs() == 2 && c.node().outputs[1] != kNoValue)
    c.fail("the second output (Indices) is not supported");
  if (c.attrs().get_int("storage_order", 0) != 0) c.fail("attribute storage_order = 1 (column-major) is not supported");
}

void infer_max_pool(OpCtx& c) {
  check_max_pool(c);
  set_out(c, pool_window(c, "max pooling"));
}

void lower_max_pool(OpCtx& c) {
  Window win = pool_window(c, "max pooling");
  Attrs a;
  a.set_ints("kernel_shape", win.kernel_attr());
  a.set_ints("strides", win.strides_attr());
  a.set_ints("pads", win.pads_attr());
  a.set_ints("dilations", win.dilations_attr());
  c.set_kernel("max_pool", std::move(a));
}

Window average_pool_window(OpCtx& c) {
  const std::vector<int64_t> dil = c.attrs().get_ints("dilations", {});
  if (std::any_of(dil.begin(), dil.end(), [](int64_t d) { return d != 1; }))
    c.fail("attribute dilations is not supported for average pooling");
  return pool_window(c, "average pooling");
}

void infer_average_pool(OpCtx& c) {
  c.expect_arity(1, 1);
  set_out(c, average_pool_window(c));
}

void lower_average_pool(OpCtx& c) {
  Window win = average_pool_window(c);
  Attrs a;
  a.set_ints("kernel_shape", win.kernel_attr());
  a.set_ints("strides", win.strides_attr());
  a.set_ints("pads", win.pads_attr());
  a.set_int("count_include_pad", c.attrs().get_int("count_include_pad", 0) != 0);
  c.set_kernel("average_pool", std::move(a));
}

// 3-D pooling (MaxPool3d, AvgPool3d: [N,C,D,H,W]) is a composite of two 2-D poolings, since a
// box window's max and mean separate by axes: first over height and width, the depth folded into
// the channels ([N, C*D, H, W]), then over the depth, the positions of each slice in one row
// ([N, C, D, oH*oW] pooled by a [kD, 1] window). Exact for the max (a tie goes to the first tap in
// (depth, height, width) order, as torch's, and a NaN wins either way) and for the mean, whose
// divisor is the product of the axes' counts (with count_include_pad or without). A stage whose
// window is one position, unstrided and unpadded is skipped (MaxPool3d((1, 3, 3))).
bool pools_3d(const OpCtx& c) { return c.in(0).shape.size() == 5; }

void expand_pool_3d(ExpandCtx& c, const char* op) {
  const Attrs& k = c.node().kernel_attrs;  // the lowered window: three axes, auto_pad resolved
  const std::vector<int64_t> ks = k.get_ints("kernel_shape"), st = k.get_ints("strides"), pads = k.get_ints("pads");
  const std::vector<int64_t> dil = k.get_ints("dilations", {1, 1, 1});
  auto stage = [&](ValueId in, std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> p,
                   std::vector<int64_t> dilations) {
    Attrs a;
    a.set_ints("kernel_shape", std::move(kernel));
    a.set_ints("strides", std::move(strides));
    a.set_ints("pads", std::move(p));
    if (std::string_view(op) == "MaxPool") a.set_ints("dilations", std::move(dilations));
    else a.set_int("count_include_pad", c.attrs().get_int("count_include_pad", 0));
    a.set_int("ceil_mode", c.attrs().get_int("ceil_mode", 0));
    return c.emit(op, {in}, std::move(a));
  };
  auto trivial = [&](size_t axis) { return ks[axis] == 1 && st[axis] == 1 && pads[axis] == 0 && pads[axis + 3] == 0; };
  WindowStage plane, depth;
  if (!trivial(1) || !trivial(2))
    plane = [&](ValueId v) { return stage(v, {ks[1], ks[2]}, {st[1], st[2]}, {pads[1], pads[2], pads[4], pads[5]}, {dil[1], dil[2]}); };
  if (!trivial(0)) depth = [&](ValueId v) { return stage(v, {ks[0], 1}, {st[0], 1}, {pads[0], 0, pads[3], 0}, {dil[0], 1}); };
  expand_by_planes_then_depth(c, plane, depth);
}

void expand_max_pool(ExpandCtx& c) { expand_pool_3d(c, "MaxPool"); }
void expand_average_pool(ExpandCtx& c) { expand_pool_3d(c, "AveragePool"); }

void infer_global_average_pool(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  Shape x = c.in(0).shape;
  if (x.size() < 3) c.fail("input 0 has shape {}, expected rank >= 3 [N,C,spatial...]", shape_str(x));
  std::fill(x.begin() + 2, x.end(), 1);
  c.out(0) = TensorDesc{x, DType::f32};
}

void lower_global_average_pool(OpCtx& c) { c.set_kernel("global_average_pool"); }

void grad_max_pool(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("MaxPoolGrad", "max_pool_grad", {g.out_grad(0), g.in(0)}, g.attrs(), g.desc(g.in(0))));
}

void grad_average_pool(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("AveragePoolGrad", "average_pool_grad", {g.out_grad(0)}, g.attrs(), g.desc(g.in(0))));
}

void grad_global_average_pool(GradCtx& g) {
  if (g.wants(0))
    g.add_in_grad(0, g.emit("GlobalAveragePoolGrad", "global_average_pool_grad", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

}  // namespace

// Pooling and its gradients treat every image alone: the batch (input 0) splits.
void images(const Graph&, const Node& n, std::vector<Signature>& out) { sbp::batch_rows(n, {true}, false, Signature::Tweak::none, out); }

OpDef average_pool_def() {
  OpDef d{"AveragePool", infer_average_pool, lower_average_pool, grad_average_pool,
          {bool_attr("ceil_mode"), bool_attr("count_include_pad"), ints_attr("kernel_shape", 1, kMaxDim),
           ints_attr("strides", 1, kMaxDim), ints_attr("dilations", 1, kMaxDim), ints_attr("pads", 0, kMaxDim)},
          {sbp_rule("average_pool", images), sbp_rule("average_pool_grad", images)}};
  d.expand = expand_average_pool;
  d.expands = pools_3d;
  return d;
}
OpDef global_average_pool_def() {
  return {"GlobalAveragePool", infer_global_average_pool, lower_global_average_pool, grad_global_average_pool, {},
          {sbp_rule("global_average_pool", images), sbp_rule("global_average_pool_grad", images)}};
}
OpDef max_pool_def() {
  OpDef d{"MaxPool", infer_max_pool, lower_max_pool, grad_max_pool,
          {bool_attr("ceil_mode"), bool_attr("storage_order"), ints_attr("kernel_shape", 1, kMaxDim),
           ints_attr("strides", 1, kMaxDim), ints_attr("dilations", 1, kMaxDim), ints_attr("pads", 0, kMaxDim)},
          {sbp_rule("max_pool", images),
           // (dY, X): both split with the batch.
           sbp_rule("max_pool_grad", [](const Graph&, const Node& n, std::vector<Signature>& out) {
             sbp::batch_rows(n, {true, true}, false, Signature::Tweak::none, out);
           })}};
  d.expand = expand_max_pool;
  d.expands = pools_3d;
  return d;
}

}  // namespace of::compiler
