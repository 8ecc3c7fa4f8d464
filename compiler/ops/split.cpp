// SPDX-License-Identifier: Apache-2.0
// Split (tensor.split, a fused qkv) and Slice on run-time tensors. Split's sizes come from the
// `split` attribute (opset < 13), a constant input (13+) or equal parts (num_outputs, 18).
// Slice at run time takes any positive steps on any axes (one axis with step 1 is kernel slice,
// the rest strided_slice: x[..., 0::2, 0::2, :]); constant slices are folded at compile time.
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

// A Slice as the kernels take it: one axis with step 1 (kernel slice: Concat's gradient and
// boxing's too), or anything else (kernel strided_slice: steps, several axes) as a start and step
// per axis. Steps must be positive (torch slices only so).
struct SliceSpec {
  Shape out;
  bool strided = false;
  int64_t axis = 0, start = 0;             // slice
  std::vector<int64_t> starts, steps;      // strided_slice: one per axis
};

SliceSpec slice_spec(OpCtx& c) {
  const TensorDesc& x = c.in(0);
  const auto rank = int64_t(x.shape.size());
  const std::vector<int64_t> starts = c.const_ints(1), ends = c.const_ints(2);
  std::vector<int64_t> axes;
  if (c.has_in(3)) {
    axes = c.const_ints(3);
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  }
  const std::vector<int64_t> steps = c.has_in(4) ? c.const_ints(4) : std::vector<int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts [{}], ends [{}], axes [{}] and steps [{}] differ in length", fmt::join(starts, ","), fmt::join(ends, ","),
           fmt::join(axes, ","), fmt::join(steps, ","));
  SliceSpec spec;
  spec.out = x.shape;
  spec.starts.assign(size_t(rank), 0);
  spec.steps.assign(size_t(rank), 1);
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t ax = c.axis(axes[i], rank, "input 3 (axes)"), dim = x.shape[size_t(ax)];
    if (seen[size_t(ax)]) c.fail("axes [{}] name axis {} twice", fmt::join(axes, ","), ax);
    seen[size_t(ax)] = true;
    if (steps[i] == 0) c.fail("step 0 on axis {}", ax);
    // A step longer than the axis takes one element alike.
    const int64_t st = steps[i] > 0 ? std::min(steps[i], std::max<int64_t>(dim, 1)) : std::max(steps[i], -std::max<int64_t>(dim, 1));
    int64_t s = starts[i], e = ends[i];
    if (s < 0 && s != std::numeric_limits<int64_t>::min()) s += dim;
    if (e < 0 && e != std::numeric_limits<int64_t>::min()) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, s, dim);
      spec.out[size_t(ax)] = (e - s + st - 1) / st;
    } else if (dim == 0) {
      s = 0;
      spec.out[size_t(ax)] = 0;
    } else {  // backward (torch.flip): from s down to just after e, as ONNX clamps them
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, s);
      spec.out[size_t(ax)] = (s - e + (-st) - 1) / -st;
    }
    spec.starts[size_t(ax)] = s;
    spec.steps[size_t(ax)] = st;
  }
  spec.strided = starts.size() != 1 || steps[0] != 1;
  if (!spec.strided) {
    spec.axis = c.axis(axes[0], rank, "input 3 (axes)");
    spec.start = spec.starts[size_t(spec.axis)];
  }
  return spec;
}

void infer_slice(OpCtx& c) {
  c.expect_arity(3, 5);
  c.out(0) = TensorDesc{slice_spec(c).out, c.in(0).dtype};
}

void lower_slice(OpCtx& c) {
  const SliceSpec spec = slice_spec(c);
  Attrs a;
  if (spec.strided) {
    a.set_ints("starts", spec.starts);
    a.set_ints("steps", spec.steps);
    c.set_kernel("strided_slice", std::move(a));
  } else {
    a.set_int("axis", spec.axis);
    a.set_int("start", spec.start);
    c.set_kernel("slice", std::move(a));
  }
  c.set_runtime_inputs({0});
}

// dX: dY in its place along the axis, zeros before and after; a strided slice's dY scattered
// into zeros.
void grad_slice(GradCtx& g) {
  if (!g.wants(0)) return;
  const TensorDesc x = g.desc(g.in(0));
  if (g.node().kernel == "strided_slice") {
    g.add_in_grad(0, g.emit("SliceGrad", "strided_slice_grad", {g.out_grad(0)}, g.attrs(), x));
    return;
  }
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

// strided_slice and its gradient: split along an axis taken whole (start 0, step 1).
void strided_slice_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const std::vector<int64_t> starts = n.kernel_attrs.get_ints("starts"), steps = n.kernel_attrs.get_ints("steps");
  const Shape& a = sbp::shape_of(g, n.inputs[0]);
  const Shape& b = sbp::shape_of(g, n.outputs[0]);
  for (size_t d = 0; d < starts.size() && d < steps.size() && d < a.size() && d < b.size(); ++d)
    if (starts[d] == 0 && steps[d] == 1 && a[d] == b[d])
      out.push_back(Signature{{Sbp::S(int64_t(d))}, {Sbp::S(int64_t(d))}, Signature::Tweak::none, true});
}

}  // namespace

OpDef slice_def() {
  return {"Slice", infer_slice, lower_slice, grad_slice, {},
          {sbp_rule("slice", sbp::other_axes), sbp_rule("strided_slice", strided_slice_sbp), sbp_rule("strided_slice_grad", strided_slice_sbp)}};
}
OpDef split_def() { return {"Split", infer_split, lower_split, grad_split,
          {int_attr("axis", -kMaxAxis, kMaxAxis), ints_attr("split", 0, kMaxInt), int_attr("num_outputs", 1, 64)},
          {sbp_rule("split", sbp::other_axes)}}; }

}  // namespace of::compiler
