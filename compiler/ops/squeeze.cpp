// SPDX-License-Identifier: Apache-2.0
// Unsqueeze and Squeeze: a new shape over the same bytes (the `copy` kernel, any dtype). Axes come
// from the attribute (opset < 13) or a constant input (opset 13 and later).
#include <algorithm>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

std::vector<int64_t> axes_of(OpCtx& c) {
  if (c.has_in(1)) return c.const_ints(1);
  return c.attrs().get_ints("axes");
}

void infer_unsqueeze(OpCtx& c) {
  c.expect_arity(1, 2);
  std::vector<int64_t> axes = axes_of(c);
  const TensorDesc& x = c.in(0);
  const auto rank = int64_t(x.shape.size() + axes.size());
  for (int64_t& a : axes) a = c.axis(a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) c.fail("axes repeat an axis");
  Shape out = x.shape;
  for (int64_t a : axes) out.insert(out.begin() + a, 1);
  c.out(0) = TensorDesc{out, x.dtype};
}

void infer_squeeze(OpCtx& c) {
  c.expect_arity(1, 2);
  const std::vector<int64_t> axes = axes_of(c);
  const TensorDesc& x = c.in(0);
  const auto rank = int64_t(x.shape.size());
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool drop = axes.empty() && x.shape[size_t(i)] == 1;
    for (int64_t a : axes) drop = drop || c.axis(a, rank) == i;
    if (drop && x.shape[size_t(i)] != 1) c.fail("cannot squeeze axis {} of input 0 {}: its size is not 1", i, shape_str(x.shape));
    if (!drop) out.push_back(x.shape[size_t(i)]);
  }
  c.out(0) = TensorDesc{out, x.dtype};
}

void lower_squeeze(OpCtx& c) {
  c.set_kernel("copy");
  c.set_runtime_inputs({0});  // the axes input is compile-time only
}

void grad_copy(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("Reshape", "copy", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

}  // namespace

OpDef squeeze_def() { return {"Squeeze", infer_squeeze, lower_squeeze, grad_copy}; }
OpDef unsqueeze_def() { return {"Unsqueeze", infer_unsqueeze, lower_squeeze, grad_copy}; }

}  // namespace of::compiler
