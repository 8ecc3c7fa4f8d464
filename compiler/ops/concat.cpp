// SPDX-License-Identifier: Apache-2.0
// Concat along one axis: inputs share rank, dtype and every dim except the axis. Any dtype.
#include <fmt/format.h>

#include <limits>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

int64_t concat_axis(const OpCtx& c) {
  if (!c.attrs().has("axis")) c.fail("attribute axis is required");
  return c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size()), "attribute axis");
}

void infer_concat(OpCtx& c) {
  c.expect_arity(1, std::numeric_limits<size_t>::max());
  const TensorDesc& first = c.in(0);
  auto axis = size_t(concat_axis(c));
  TensorDesc out = first;
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    const TensorDesc& x = c.in(i);
    if (x.dtype != first.dtype)
      c.fail("input {} has dtype {}, expected {} like input 0", i, dtype_name(x.dtype), dtype_name(first.dtype));
    bool ok = x.shape.size() == first.shape.size();
    for (size_t k = 0; ok && k < x.shape.size(); ++k) ok = k == axis || x.shape[k] == first.shape[k];
    if (!ok) {
      std::vector<std::string> want;
      for (size_t k = 0; k < first.shape.size(); ++k) want.push_back(k == axis ? "*" : std::to_string(first.shape[k]));
      c.fail("input {} has shape {}, expected [{}] (input 0 is {}, concat axis {})", i, shape_str(x.shape),
             fmt::join(want, ","), shape_str(first.shape), axis);
    }
    out.shape[axis] += x.shape[axis];
  }
  c.out(0) = out;
}

void lower_concat(OpCtx& c) {
  Attrs a;
  a.set_int("axis", concat_axis(c));
  c.set_kernel("concat", std::move(a));
}

// dX_i is input i's part of dY along the axis.
void grad_concat(GradCtx& g) {
  const int64_t axis = g.attrs().get_int("axis", 0);
  int64_t start = 0;
  for (size_t i = 0; i < g.node().inputs.size(); ++i) {
    const TensorDesc d = g.desc(g.in(i));
    if (g.wants(i)) {
      Attrs a;
      a.set_int("axis", axis);
      a.set_int("start", start);
      g.add_in_grad(i, g.emit("ConcatGrad", "slice", {g.out_grad(0)}, std::move(a), d));
    }
    start += d.shape[size_t(axis)];
  }
}

}  // namespace

OpDef concat_def() { return {"Concat", infer_concat, lower_concat, grad_concat, {int_attr("axis", -kMaxAxis, kMaxAxis)}, {sbp_rule("concat", sbp::other_axes)}}; }

}  // namespace of::compiler
