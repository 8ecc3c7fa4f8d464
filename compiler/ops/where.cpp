// SPDX-License-Identifier: Apache-2.0
// Where(cond, a, b) and Expand(x, shape): numpy broadcasting to the output shape. Where is how
// the exporter writes masked_fill (a causal mask); Expand how it writes tensor.expand.
#include <fmt/format.h>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_where(OpCtx& c) {
  c.expect_arity(3, 3);
  if (c.in(0).dtype != DType::bool_) c.fail("input 0 (condition) has dtype {}, expected bool", dtype_name(c.in(0).dtype));
  c.expect_float(1);
  c.expect_float(2);
  c.out(0) = TensorDesc{broadcast_shapes(c, broadcast_shapes(c, c.in(0).shape, c.in(1).shape), c.in(2).shape), DType::f32};
}

void lower_where(OpCtx& c) { c.set_kernel("where"); }

// da = where(cond, dy, 0), db = where(cond, 0, dy), each summed back to its input's shape.
void grad_where(GradCtx& g) {
  const ValueId dy = g.out_grad(0), zero = g.scalar(0.0f);
  if (g.wants(1)) g.add_in_grad(1, g.unbroadcast(g.emit("WhereGrad", "where", {g.in(0), dy, zero}, {}, g.desc(dy)), g.desc(g.in(1)).shape));
  if (g.wants(2)) g.add_in_grad(2, g.unbroadcast(g.emit("WhereGrad", "where", {g.in(0), zero, dy}, {}, g.desc(dy)), g.desc(g.in(2)).shape));
}

void infer_expand(OpCtx& c) {
  c.expect_arity(2, 2);
  const TensorDesc& x = c.in(0);
  if (x.dtype != DType::f32 && x.dtype != DType::i64) c.fail("input 0 has dtype {}, expected f32 or i64", dtype_name(x.dtype));
  const std::vector<int64_t> shape = c.const_ints(1);
  for (int64_t d : shape)
    if (d < 0) c.fail("input 1 (shape) [{}] has a negative dimension", fmt::join(shape, ","));
  const Shape out = broadcast_shapes(c, x.shape, shape);
  int64_t n = 1;
  for (int64_t d : out) {
    if (d > 0 && n > (int64_t(1) << 40) / d) c.fail("expands input 0 {} to a tensor too large to hold", shape_str(x.shape));
    n *= d;
  }
  c.out(0) = TensorDesc{out, x.dtype};
}

void lower_expand(OpCtx& c) {
  c.set_kernel("expand");
  c.set_runtime_inputs({0});
}

void grad_expand(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.unbroadcast(g.out_grad(0), g.desc(g.in(0)).shape));
}

// Expand: a split of an output axis the input has at full size splits the input there too; an
// axis the input broadcasts along reads the input whole (B). The shape input stays B.
void expand_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const Shape& x = sbp::shape_of(g, n.inputs[0]);
  const Shape& y = sbp::shape_of(g, n.outputs[0]);
  for (size_t a = 0; a < y.size(); ++a) {
    if (y[a] <= 1) continue;
    const int64_t ax = int64_t(a) - int64_t(y.size() - x.size());
    out.push_back(Signature{{ax >= 0 && x[size_t(ax)] == y[a] ? Sbp::S(ax) : Sbp::B()}, {Sbp::S(int64_t(a))}, Signature::Tweak::none, true});
  }
}

}  // namespace

OpDef expand_def() { return {"Expand", infer_expand, lower_expand, grad_expand, {}, {sbp_rule("expand", expand_sbp)}}; }
OpDef where_def() { return {"Where", infer_where, lower_where, grad_where, {}, {sbp_rule("where", sbp::elementwise)}}; }

}  // namespace of::compiler
