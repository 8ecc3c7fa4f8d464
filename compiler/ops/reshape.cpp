// SPDX-License-Identifier: Apache-2.0
// Flatten, Reshape and Identity: a new shape over the same bytes, so all three run the `copy`
// kernel and accept any dtype. Reshape's target shape must be known at compile time.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_flatten(OpCtx& c) {
  c.expect_arity(1, 1);
  const TensorDesc& x = c.in(0);
  auto rank = int64_t(x.shape.size());
  int64_t axis = c.attrs().get_int("axis", 1);
  // Unlike most axes, Flatten's may equal the rank (everything goes into the first dim).
  if (axis < -rank || axis > rank) c.fail("axis {} is out of range [{}, {}] for input 0 {}", axis, -rank, rank, shape_str(x.shape));
  if (axis < 0) axis += rank;
  Shape outer(x.shape.begin(), x.shape.begin() + axis), inner(x.shape.begin() + axis, x.shape.end());
  c.out(0) = TensorDesc{{numel(outer), numel(inner)}, x.dtype};
}

void infer_reshape(OpCtx& c) {
  c.expect_arity(2, 2);
  if (c.in(1).shape.size() != 1) c.fail("input 1 (shape) has shape {}, expected rank 1", shape_str(c.in(1).shape));
  const TensorDesc& x = c.in(0);
  const Shape want = c.const_ints(1);
  bool allow_zero = c.attrs().get_int("allowzero", 0) != 0;
  Shape out(want.size());
  int64_t known = 1;
  size_t infer_at = want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == -1) {
      if (infer_at != want.size()) c.fail("target shape {} has more than one -1", shape_str(want));
      infer_at = i;
      continue;
    }
    if (d == 0 && !allow_zero) {  // 0 copies the input's dim
      if (i >= x.shape.size())
        c.fail("target shape {} copies dim {} (0) but input 0 {} has rank {}", shape_str(want), i, shape_str(x.shape), x.shape.size());
      d = x.shape[i];
    } else if (d < 0) {
      c.fail("target shape {} has invalid dim {}", shape_str(want), d);
    }
    out[i] = d;
    known *= d;
  }
  if (infer_at != want.size()) {
    if (known == 0 || numel(x.shape) % known != 0)
      c.fail("cannot reshape input 0 {} ({} elements) to {}: no size for the -1 fits", shape_str(x.shape),
             numel(x.shape), shape_str(want));
    out[infer_at] = numel(x.shape) / known;
  }
  if (numel(out) != numel(x.shape))
    c.fail("cannot reshape input 0 {} ({} elements) to {} ({} elements)", shape_str(x.shape), numel(x.shape),
           shape_str(out), numel(out));
  c.out(0) = TensorDesc{out, x.dtype};
}

void infer_identity(OpCtx& c) {
  c.expect_arity(1, 1);
  c.out(0) = c.in(0);
}

void lower_copy(OpCtx& c) { c.set_kernel("copy"); }

void lower_reshape(OpCtx& c) {
  c.set_kernel("copy");
  c.set_runtime_inputs({0});  // the shape input is compile-time only
}

// The data is the same bytes in another shape: the gradient is dY in X's shape.
void grad_copy(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("Reshape", "copy", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

}  // namespace

OpDef flatten_def() { return {"Flatten", infer_flatten, lower_copy, grad_copy}; }
OpDef identity_def() { return {"Identity", infer_identity, lower_copy, grad_copy}; }
OpDef reshape_def() { return {"Reshape", infer_reshape, lower_reshape, grad_copy}; }

}  // namespace of::compiler
