// SPDX-License-Identifier: Apache-2.0
// Trilu (torch.triu, torch.tril) of data computed at run time, as attention code masks scores or
// builds a triangular factor: a composite, Where(mask, x, 0) with the constant mask of the last
// two axes (rows i, columns j: kept where j - i >= k for triu, j - i <= k for tril; k a constant).
// Zeros, not x times 0, outside the triangle: an infinity or a NaN there becomes 0, as torch's.
// The gradient flows inside the triangle. On a constant, Trilu folds (const_eval.cpp).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_trilu(OpCtx& c) {
  c.expect_arity(1, 2);
  c.expect_float(0);
  if (c.in(0).shape.size() < 2) c.fail("input 0 has shape {}, expected rank 2 or more", shape_str(c.in(0).shape));
  if (c.has_in(1) && c.const_ints(1).size() != 1) c.fail("input 1 (k) must hold one value");
  c.out(0) = c.in(0);
}

void lower_trilu(OpCtx& c) {
  c.node().kernel_attrs.set_int("k", c.has_in(1) ? c.const_ints(1)[0] : 0);
}

void expand_trilu(ExpandCtx& c) {
  const Shape x = c.shape(c.input(0));
  const int64_t rows = x[x.size() - 2], cols = x.back(), k = c.node().kernel_attrs.get_int("k", 0);
  const bool upper = c.attrs().get_int("upper", 1) != 0;
  std::vector<float> keep(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) keep[size_t(i * cols + j)] = (upper ? j - i >= k : j - i <= k) ? 1.0f : 0.0f;
  Attrs to_bool;
  to_bool.set_int("to", 9);  // ONNX BOOL: folds into a constant mask
  const ValueId mask = c.emit("Cast", {c.floats({rows, cols}, keep)}, std::move(to_bool));
  c.emit("Where", {mask, c.input(0), c.floats({}, {0.0f})}, {}, c.output(0));
}

}  // namespace

OpDef trilu_def() {
  OpDef d{"Trilu", infer_trilu, lower_trilu, nullptr, {bool_attr("upper")}};
  d.expand = expand_trilu;
  return d;
}

}  // namespace of::compiler
