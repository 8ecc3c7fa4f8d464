// SPDX-License-Identifier: Apache-2.0
// MaxPool and AveragePool (1-D and 2-D, explicit or auto_pad pads, ceil_mode) and GlobalAveragePool.
#include <algorithm>

#include "compiler/ops/ops.h"
#include "compiler/ops/window.h"

namespace of::compiler {
namespace {

// Checks what both pooling ops share and returns the window; `what` names the op in messages.
Window2d pool_window(OpCtx& c, std::string_view what) {
  c.expect_float(0);
  const int axes = expect_1d_or_2d(c, what);
  if (!c.attrs().has("kernel_shape")) c.fail("attribute kernel_shape is required");
  std::vector<int64_t> k = c.attrs().get_ints("kernel_shape");
  if (k.size() != size_t(axes)) c.fail("attribute kernel_shape has {} values, expected {}", k.size(), axes);
  int64_t ceil_mode = c.attrs().get_int("ceil_mode", 0);
  return window_2d(c, c.in(0).shape, axes == 1 ? std::array<int64_t, 2>{1, k[0]} : std::array<int64_t, 2>{k[0], k[1]},
                   ceil_mode != 0);
}

void set_out(OpCtx& c, const Window2d& win) {
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
  Window2d win = pool_window(c, "max pooling");
  Attrs a;
  a.set_ints("kernel_shape", {win.kernel.begin(), win.kernel.end()});
  a.set_ints("strides", {win.strides.begin(), win.strides.end()});
  a.set_ints("pads", {win.pads.begin(), win.pads.end()});
  a.set_ints("dilations", {win.dilations.begin(), win.dilations.end()});
  c.set_kernel("max_pool", std::move(a));
}

Window2d average_pool_window(OpCtx& c) {
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
  Window2d win = average_pool_window(c);
  Attrs a;
  a.set_ints("kernel_shape", {win.kernel.begin(), win.kernel.end()});
  a.set_ints("strides", {win.strides.begin(), win.strides.end()});
  a.set_ints("pads", {win.pads.begin(), win.pads.end()});
  a.set_int("count_include_pad", c.attrs().get_int("count_include_pad", 0) != 0);
  c.set_kernel("average_pool", std::move(a));
}

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

OpDef average_pool_def() { return {"AveragePool", infer_average_pool, lower_average_pool, grad_average_pool,
          {bool_attr("ceil_mode"), bool_attr("count_include_pad"), ints_attr("kernel_shape", 1, kMaxDim),
           ints_attr("strides", 1, kMaxDim), ints_attr("dilations", 1, kMaxDim), ints_attr("pads", 0, kMaxDim)},
          {sbp_rule("average_pool", images), sbp_rule("average_pool_grad", images)}}; }
OpDef global_average_pool_def() {
  return {"GlobalAveragePool", infer_global_average_pool, lower_global_average_pool, grad_global_average_pool, {},
          {sbp_rule("global_average_pool", images), sbp_rule("global_average_pool_grad", images)}};
}
OpDef max_pool_def() { return {"MaxPool", infer_max_pool, lower_max_pool, grad_max_pool,
          {bool_attr("ceil_mode"), bool_attr("storage_order"), ints_attr("kernel_shape", 1, kMaxDim),
           ints_attr("strides", 1, kMaxDim), ints_attr("dilations", 1, kMaxDim), ints_attr("pads", 0, kMaxDim)},
          {sbp_rule("max_pool", images),
           // (dY, X): both split with the batch.
           sbp_rule("max_pool_grad", [](const Graph&, const Node& n, std::vector<Signature>& out) {
             sbp::batch_rows(n, {true, true}, false, Signature::Tweak::none, out);
           })}}; }

}  // namespace of::compiler
