// SPDX-License-Identifier: Apache-2.0
// TopK: torch.topk and torch.sort (values and int64 positions along one axis; a constant k; the
// k largest, or smallest with largest = 0, in order: sorted = 0 allows any order, so ours). A
// mixture of experts' router keeps its top-k gates with it. The gradient puts dValues back at
// the positions (topk_grad), as torch's; the positions are data and get none.
#include <cstring>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

int64_t topk_axis(const OpCtx& c) { return c.axis(c.attrs().get_int("axis", -1), int64_t(c.in(0).shape.size())); }

int64_t k_of(const OpCtx& c) {
  const std::vector<uint8_t>* d = c.const_data(1);
  if (!d || c.in(1).dtype != DType::i64 || numel(c.in(1).shape) != 1) c.fail("input 1 (k) must be a constant int64 (one value)");
  int64_t k;
  std::memcpy(&k, d->data(), 8);
  return k;
}

void infer_topk(OpCtx& c) {
  c.expect_arity(2, 2, 2);
  c.expect_float(0);
  const Shape& x = c.in(0).shape;
  if (x.empty()) c.fail("input 0 is a scalar: it has no axis to take the top k along");
  const int64_t axis = topk_axis(c), k = k_of(c);
  if (k < 1 || k > x[size_t(axis)]) c.fail("k = {} is outside [1, {}] (axis {} of input 0 {})", k, x[size_t(axis)], axis, shape_str(x));
  Shape picked = x;
  picked[size_t(axis)] = k;
  c.out(0) = TensorDesc{picked, DType::f32};
  c.out(1) = TensorDesc{picked, DType::i64};
}

Attrs topk_attrs(const OpCtx& c) {
  Attrs a;
  a.set_int("axis", topk_axis(c));
  a.set_int("k", k_of(c));
  a.set_int("largest", c.attrs().get_int("largest", 1) != 0 ? 1 : 0);
  return a;
}

void lower_topk(OpCtx& c) {
  c.set_kernel("topk", topk_attrs(c));
  c.set_runtime_inputs({0});
}

void grad_topk(GradCtx& g) {
  if (!g.wants(0) || g.out_grad(0) == kNoValue) return;  // the positions alone carry no gradient
  g.add_in_grad(0, g.emit("TopKGrad", "topk_grad", {g.out_grad(0), g.out(1)}, g.node().kernel_attrs, g.desc(g.in(0))));
}

// Split along any other axis: each device's rows are whole along the one selected from (k, a
// constant of one value, is on every device).
void topk_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const int64_t axis = n.kernel_attrs.get_int("axis", -1);
  const Shape& y = g.values[size_t(n.outputs[0])].desc.shape;
  for (int64_t a = 0; a < int64_t(y.size()); ++a) {
    if (a == axis || y[size_t(a)] <= 1) continue;
    Signature sig{{}, std::vector<Sbp>(n.outputs.size(), Sbp::S(a)), Signature::Tweak::none, true};
    for (ValueId v : n.inputs) sig.in.push_back(v != kNoValue && g.values[size_t(v)].desc.shape.size() == y.size() ? Sbp::S(a) : Sbp::B());
    out.push_back(std::move(sig));
  }
}

}  // namespace

OpDef topk_def() {
  return {"TopK", infer_topk, lower_topk, grad_topk,
          {int_attr("axis", -kMaxAxis, kMaxAxis), bool_attr("largest"), bool_attr("sorted")},
          {sbp_rule("topk", topk_sbp), sbp_rule("topk_grad", topk_sbp)}};
}

}  // namespace of::compiler
