// SPDX-License-Identifier: Apache-2.0
// ScatterElements (Tensor.scatter_ and scatter_add_, index_add_ as torch writes it: f32 data and
// updates, int64 or int32 indices along `axis`, reduction none or add) and of.GatherElements
// (GatherElements with indices known only at run time, which the GatherElements composite
// becomes): kernels scatter_elements and gather_elements (kernels/elements_space.h), each the
// other's gradient: a scatter passes dY to the updates by gathering it at the indices, and to the
// data as it is (add) or with the overwritten elements cleared (none); a gather's gradient adds
// dY into zeros at the indices.
//
// Without a reduction, two updates of one element leave whichever comes last: ONNX leaves that
// order undefined, and torch writes scatter_add below opset 16 (and index_add at any opset, but
// through scripts/of_export.py) as data + ScatterElements(zeros, ...) without one, which would drop
// all but one of a repeated index's additions. So such a
// scatter runs only where no element can be written twice: constant indices that never repeat in
// a line, or one index per line (a one-hot of labels: `zeros.scatter_(1, labels[:, None], 1)`).
#include <cstring>
#include <set>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

// The indices as int64 (constant ones), or empty when they are computed at run time.
std::vector<int64_t> constant_indices(const OpCtx& c, size_t i) {
  const std::vector<uint8_t>* d = c.const_data(i);
  if (!d) return {};
  std::vector<int64_t> v(size_t(numel(c.in(i).shape)));
  if (c.in(i).dtype == DType::i64) {
    std::memcpy(v.data(), d->data(), v.size() * 8);
  } else {
    for (size_t k = 0; k < v.size(); ++k) {
      int32_t x;
      std::memcpy(&x, d->data() + k * 4, 4);
      v[k] = x;
    }
  }
  return v;
}

// Checks data (input 0), indices (`idx_input`) and, with `updates`, updates of the indices'
// shape; returns the axis.
int64_t check_elements(OpCtx& c, size_t idx_input, bool updates) {
  c.expect_float(0);
  const Shape& data = c.in(0).shape;
  const TensorDesc& idx = c.in(idx_input);
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32)
    c.fail("input {} (indices) has dtype {}, expected int64 or int32", idx_input, dtype_name(idx.dtype));
  if (idx.shape.size() != data.size() || data.empty())
    c.fail("indices {} and data {} must have one rank", shape_str(idx.shape), shape_str(data));
  const int64_t axis = c.axis(c.attrs().get_int("axis", 0), int64_t(data.size()), "attribute axis");
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && idx.shape[d] > data[d])
      c.fail("indices {} exceed data {} on axis {}", shape_str(idx.shape), shape_str(data), d);
  if (updates) {
    c.expect_float(idx_input + 1);
    if (c.in(idx_input + 1).shape != idx.shape)
      c.fail("input {} (updates) has shape {}, expected the indices' {}", idx_input + 1, shape_str(c.in(idx_input + 1).shape),
             shape_str(idx.shape));
  }
  return axis;
}

// Whether some element of data could be written twice: constant indices repeating within a line,
// or run-time ones with more than one per line.
bool may_repeat(const OpCtx& c, int64_t axis) {
  const Shape& idx = c.in(1).shape;
  const int64_t per_line = idx[size_t(axis)];
  if (per_line <= 1) return false;
  const std::vector<int64_t> v = constant_indices(c, 1);
  if (v.empty()) return numel(idx) > 0;
  const int64_t len = c.in(0).shape[size_t(axis)];
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < idx.size(); ++d) inner *= idx[d];
  const int64_t lines = int64_t(v.size()) / per_line;
  for (int64_t l = 0; l < lines; ++l) {
    const int64_t outer = l / inner, in = l % inner;
    std::set<int64_t> seen;
    for (int64_t j = 0; j < per_line; ++j) {
      int64_t at = v[size_t((outer * per_line + j) * inner + in)];
      if (at < 0) at += len;
      if (!seen.insert(at).second) return true;
    }
  }
  return false;
}

bool adds(const OpCtx& c) {
  const std::string reduction = c.attrs().get_str("reduction", "none");
  if (reduction != "none" && reduction != "add")
    c.fail("attribute reduction = '{}' is not supported (none or add: Tensor.scatter_, scatter_add_)", reduction);
  return reduction == "add";
}

void infer_scatter_elements(OpCtx& c) {
  c.expect_arity(3, 3);
  const int64_t axis = check_elements(c, 1, true);
  if (!adds(c) && may_repeat(c, axis))
    c.fail("indices {} may name one element twice, which a scatter without reduction leaves to chance (torch writes "
           "scatter_add below opset 16, and index_add, as a scatter into zeros plus data: export with opset_version=16 through "
           "scripts/of_export.py, which writes both with reduction='add')",
           shape_str(c.in(1).shape));
  c.out(0) = c.in(0);
}

void lower_scatter_elements(OpCtx& c) {
  Attrs a;
  a.set_int("axis", c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size()), "attribute axis"));
  a.set_int("mode", int64_t(adds(c) ? 1 : 0));  // ScatterMode add, set
  c.set_kernel("scatter_elements", std::move(a));
}

Attrs axis_only(const GradCtx& g) {
  Attrs a;
  a.set_int("axis", g.attrs().get_int("axis", 0));
  return a;
}

void grad_scatter_elements(GradCtx& g) {
  const ValueId dy = g.out_grad(0);
  if (g.wants(0)) {
    if (g.attrs().get_int("mode", 0) == 1) {
      g.add_in_grad(0, dy);
    } else {
      Attrs clear = axis_only(g);
      clear.set_int("mode", 3);
      g.add_in_grad(0, g.emit("ScatterElementsGrad", "scatter_elements", {dy, g.in(1)}, std::move(clear), g.desc(g.in(0))));
    }
  }
  if (g.wants(2)) g.add_in_grad(2, g.emit("ScatterElementsGrad", "gather_elements", {dy, g.in(1)}, axis_only(g), g.desc(g.in(2))));
}

void infer_gather_elements_kernel(OpCtx& c) {
  c.expect_arity(2, 2);
  check_elements(c, 1, false);
  c.out(0) = TensorDesc{c.in(1).shape, DType::f32};
}

void lower_gather_elements_kernel(OpCtx& c) {
  Attrs a;
  a.set_int("axis", c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size()), "attribute axis"));
  c.set_kernel("gather_elements", std::move(a));
}

void grad_gather_elements_kernel(GradCtx& g) {
  if (!g.wants(0)) return;
  Attrs a = axis_only(g);
  a.set_int("mode", 2);  // add to zeros
  g.add_in_grad(0, g.emit("GatherElementsGrad", "scatter_elements", {g.in(1), g.out_grad(0)}, std::move(a), g.desc(g.in(0))));
}

// Lines along the axis are independent: off axis 0, every tensor may split by rows where the
// indices cover all of data's rows.
void rows_unless_axis_0(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const int64_t axis = n.kernel_attrs.get_int("axis", 0);
  bool rows = axis != 0;
  for (ValueId v : n.inputs)
    if (g.values[size_t(v)].desc.shape.empty() || g.values[size_t(v)].desc.shape[0] != g.values[size_t(n.outputs[0])].desc.shape[0])
      rows = false;
  if (rows) sbp::batch_rows(n, std::vector<bool>(n.inputs.size(), true), false, Signature::Tweak::none, out);
}

const std::vector<AttrRule> kAxis = {int_attr("axis", -kMaxAxis, kMaxAxis)};

}  // namespace

OpDef scatter_elements_def() {
  return {"ScatterElements", infer_scatter_elements, lower_scatter_elements, grad_scatter_elements, kAxis,
          {sbp_rule("scatter_elements", rows_unless_axis_0)}};
}

OpDef gather_elements_kernel_def() {
  return {"of.GatherElements", infer_gather_elements_kernel, lower_gather_elements_kernel, grad_gather_elements_kernel, kAxis,
          {sbp_rule("gather_elements", rows_unless_axis_0)}};
}

}  // namespace of::compiler
