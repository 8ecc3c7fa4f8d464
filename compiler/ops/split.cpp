// SPDX-License-Identifier: Apache-2.0
// Split (tensor.split, a fused qkv) and Slice on run-time tensors. Split's sizes come from the
// `split` attribute (opset < 13), a constant input (13+) or equal parts (num_outputs, 18).
// Slice at run time covers one axis with step 1 (what the exporter writes for weights and
// activations); constant slices of other forms are folded at compile time.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

std::vector<int64_t> split_sizes(OpCtx& c, int64_t axis) {
  const int64_t dim = c.in(0).shape[size_t(axis)];
  std::vector<int64_t> sizes = c.has_in(1) ? c.const_ints(1) : c.attrs().get_ints("split");
  const auto parts = int64_t(c.num_outputs());
  if (c.attrs().has("num_outputs") && c.attrs().get_int("num_outputs", 0) != parts)
    c.fail("attribute num_outputs = {} but the node has {} outputs", c.attrs().get_int("num_outputs", 0), parts);
  if (!sizes.empty() && int64_t(sizes.size()) != parts)
    c.fail("split sizes [{}] name {} parts for {} outputs", fmt::join(sizes, ","), sizes.size(), parts);
  if (sizes.empty()) {
    // Equal parts, the last one smaller (opset 18's rule; opsets 13-17 need dim % parts == 0).
    const int64_t each = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(each, dim - i * each));
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim - sum) c.fail("split sizes [{}] do not fit axis {} ({})", fmt::join(sizes, ","), axis, dim);
    sum += s;
  }
  if (int64_t(sizes.size()) != parts || sum != dim)
    c.fail("split sizes [{}] do not cut axis {} of input 0 {} into {} outputs", fmt::join(sizes, ","), axis,
           shape_str(c.in(0).shape), parts);
  return sizes;
}

void infer_split(OpCtx& c) {
  c.expect_arity(1, 2, 64);
  const TensorDesc& x = c.in(0);
  const int64_t axis = c.axis(c.attrs().get_int("axis", 0), int64_t(x.shape.size()), "attribute axis");
  const std::vector<int64_t> sizes = split_sizes(c, axis);
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape s = x.shape;
    s[size_t(axis)] = sizes[k];
    c.out(k) = TensorDesc{s, x.dtype};
  }
}

void lower_split(OpCtx& c) {
  Attrs a;
  a.set_int("axis", c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size()), "attribute axis"));
  c.set_kernel("split", std::move(a));
  c.set_runtime_inputs({0});
}

// dX is the outputs' gradients side by side; an output nothing reads contributes zeros.
void grad_split(GradCtx& g) {
  if (!g.wants(0)) return;
  const int64_t axis = g.attrs().get_int("axis", 0);
  std::vector<ValueId> parts;
  for (size_t k = 0; k < g.node().outputs.size(); ++k) {
    ValueId dk = g.out_grad(k);
    if (dk == kNoValue) {
      const TensorDesc d = g.desc(g.out(k));
      dk = g.constant(d.shape, std::vector<float>(size_t(numel(d.shape)), 0.0f));
    }
    parts.push_back(dk);
  }
  Attrs a;
  a.set_int("axis", axis);
  g.add_in_grad(0, g.emit("SplitGrad", "concat", parts, std::move(a), g.desc(g.in(0))));
}

struct SliceRange {
  int64_t axis, start, size;
};

SliceRange slice_range(OpCtx& c) {
  const TensorDesc& x = c.in(0);
  const auto rank = int64_t(x.shape.size());
  const std::vector<int64_t> starts = c.const_ints(1), ends = c.const_ints(2);
  const std::vector<int64_t> axes = c.has_in(3) ? c.const_ints(3) : std::vector<int64_t>{0};
  const std::vector<int64_t> steps = c.has_in(4) ? c.const_ints(4) : std::vector<int64_t>{1};
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 || steps[0] != 1)
    c.fail("slices a run-time tensor on {} axes with steps [{}]; only one axis with step 1 is supported", starts.size(),
           fmt::join(steps, ","));
  const int64_t axis = c.axis(axes[0], rank), dim = x.shape[size_t(axis)];
  int64_t s = starts[0], e = ends[0];
  if (s < 0) s += dim;
  if (e < 0 && e != std::numeric_limits<int64_t>::min()) e += dim;
  s = std::clamp<int64_t>(s, 0, dim);
  e = std::clamp<int64_t>(e, s, dim);
  return {axis, s, e - s};
}

void infer_slice(OpCtx& c) {
  c.expect_arity(3, 5);
  const SliceRange r = slice_range(c);
  Shape s = c.in(0).shape;
  s[size_t(r.axis)] = r.size;
  c.out(0) = TensorDesc{s, c.in(0).dtype};
}

void lower_slice(OpCtx& c) {
  const SliceRange r = slice_range(c);
  Attrs a;
  a.set_int("axis", r.axis);
  a.set_int("start", r.start);
  c.set_kernel("slice", std::move(a));
  c.set_runtime_inputs({0});
}

// dX: dY in its place along the axis, zeros before and after.
void grad_slice(GradCtx& g) {
  if (!g.wants(0)) return;
  const TensorDesc x = g.desc(g.in(0));
  const int64_t axis = g.attrs().get_int("axis", 0), start = g.attrs().get_int("start", 0);
  const int64_t size = g.desc(g.out(0)).shape[size_t(axis)], dim = x.shape[size_t(axis)];
  std::vector<ValueId> parts;
  auto zeros = [&](int64_t n) {
    Shape s = x.shape;
    s[size_t(axis)] = n;
    return g.constant(s, std::vector<float>(size_t(numel(s)), 0.0f));
  };
  if (start > 0) parts.push_back(zeros(start));
  parts.push_back(g.out_grad(0));
  if (start + size < dim) parts.push_back(zeros(dim - start - size));
  if (parts.size() == 1) {
    g.add_in_grad(0, g.emit("SliceGrad", "copy", parts, {}, x));
    return;
  }
  Attrs a;
  a.set_int("axis", axis);
  g.add_in_grad(0, g.emit("SliceGrad", "concat", parts, std::move(a), x));
}

}  // namespace

OpDef slice_def() { return {"Slice", infer_slice, lower_slice, grad_slice, {}, {sbp_rule("slice", sbp::other_axes)}}; }
OpDef split_def() { return {"Split", infer_split, lower_split, grad_split,
          {int_attr("axis", -kMaxAxis, kMaxAxis), ints_attr("split", 0, kMaxInt), int_attr("num_outputs", 1, 64)},
          {sbp_rule("split", sbp::other_axes)}}; }

}  // namespace of::compiler
