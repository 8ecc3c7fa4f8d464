// SPDX-License-Identifier: Apache-2.0
// CumSum (torch.cumsum, with exclusive and reverse): a composite, the input's axis moved last
// (Transpose) and multiplied (MatMul) by a constant [L, L] triangle of ones, whose transpose is
// the gradient's product. The triangle grows with the square of the axis: up to kMaxLength.
#include <fmt/format.h>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

constexpr int64_t kMaxLength = 2048;  // a 16 MiB triangle

void infer_cumsum(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  const std::vector<int64_t> axis = c.const_ints(1);
  if (axis.size() != 1) c.fail("axis must hold one value, holds {}", axis.size());
  const Shape& x = c.in(0).shape;
  const int64_t a = c.axis(axis[0], int64_t(x.size()));
  if (x[size_t(a)] > kMaxLength)
    c.fail("axis {} of input 0 {} is longer than {}: its sums are a product with an [L, L] triangle here", a, shape_str(x), kMaxLength);
  c.out(0) = c.in(0);
}

void lower_cumsum(OpCtx& c) {
  c.node().kernel_attrs.set_int("axis", c.axis(c.const_ints(1)[0], int64_t(c.in(0).shape.size())));
}

void expand_cumsum(ExpandCtx& c) {
  const Shape x = c.shape(c.input(0));
  const auto a = size_t(c.node().kernel_attrs.get_int("axis", 0));
  const int64_t n = x[a];
  const bool exclusive = c.attrs().get_int("exclusive", 0) != 0, reverse = c.attrs().get_int("reverse", 0) != 0;
  // y[j] = sum of x[i] over i <= j (reverse: i >= j; exclusive: not i == j): y = x U.
  std::vector<float> u(size_t(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if ((reverse ? i >= j : i <= j) && !(exclusive && i == j)) u[size_t(i * n + j)] = 1.0f;
  const ValueId triangle = c.floats({n, n}, u);
  if (a + 1 == x.size()) {
    c.emit("MatMul", {c.input(0), triangle}, {}, c.output(0));
    return;
  }
  std::vector<int64_t> swap(x.size());
  for (size_t i = 0; i < x.size(); ++i) swap[i] = int64_t(i);
  std::swap(swap[a], swap.back());  // its own inverse
  Attrs perm;
  perm.set_ints("perm", swap);
  const ValueId last = c.emit("Transpose", {c.input(0)}, perm);
  c.emit("Transpose", {c.emit("MatMul", {last, triangle})}, perm, c.output(0));
}

}  // namespace

OpDef cumsum_def() {
  OpDef d{"CumSum", infer_cumsum, lower_cumsum, nullptr, {bool_attr("exclusive"), bool_attr("reverse")}};
  d.expand = expand_cumsum;
  return d;
}

}  // namespace of::compiler
