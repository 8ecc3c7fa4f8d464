// SPDX-License-Identifier: Apache-2.0
// Softmax and LogSoftmax (opset 13: along one axis, default -1); the kernel gets a non-negative axis.
#include <algorithm>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

int64_t softmax_axis(const OpCtx& c) {
  return c.axis(c.attrs().get_int("axis", -1), int64_t(c.in(0).shape.size()), "attribute axis");
}

void infer_softmax(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  softmax_axis(c);
  c.out(0) = c.in(0);
}

template <const char* kKernel>
void lower_softmax(OpCtx& c) {
  Attrs a;
  a.set_int("axis", softmax_axis(c));
  c.set_kernel(kKernel, std::move(a));
}

constexpr char kSoftmax[] = "softmax", kLogSoftmax[] = "log_softmax";

template <const char* kKernel>
void grad_softmax(GradCtx& g) {
  if (!g.wants(0)) return;
  Attrs a;
  a.set_int("axis", g.attrs().get_int("axis", 0));
  g.add_in_grad(0, g.emit(g.node().op_type + "Grad", std::string(kKernel) + "_grad", {g.out_grad(0), g.out(0)}, std::move(a), g.desc(g.in(0))));
}

// of.MaskedSoftmax(x, cond), attribute masked (1: cond true masks, 0: cond false masks): what
// fuse-masked-softmax makes of Where(cond, -inf, x) -> Softmax(axis -1), attention's causal mask
// (kernels/rules.h, masked_softmax). cond, leading 1s dropped, is x's last dims.
size_t cond_dims(const Shape& cond) {
  size_t lead = 0;
  while (lead < cond.size() && cond[lead] == 1) ++lead;
  return cond.size() - lead;
}

void infer_masked_softmax(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  if (c.in(1).dtype != DType::bool_) c.fail("input 1 (condition) has dtype {}, expected bool", dtype_name(c.in(1).dtype));
  if (!masked_softmax_fits(c.in(0).shape, c.in(1).shape))
    c.fail("input 1 (condition) {} is not the last dims of input 0 {}", shape_str(c.in(1).shape), shape_str(c.in(0).shape));
  c.out(0) = c.in(0);
}

void lower_masked_softmax(OpCtx& c) {
  Attrs a;
  a.set_int("masked", c.attrs().get_int("masked", 1));
  c.set_kernel("masked_softmax", std::move(a));
}

// Softmax's gradient with the mask's zeros, as Where's gradient writes them; none for cond.
void grad_masked_softmax(GradCtx& g) {
  if (!g.wants(0)) return;
  Attrs a;
  a.set_int("masked", g.attrs().get_int("masked", 1));
  g.add_in_grad(0, g.emit("MaskedSoftmaxGrad", "masked_softmax_grad", {g.out_grad(0), g.out(0), g.in(1)}, std::move(a), g.desc(g.in(0))));
}

// Split along the axes of x that cond broadcasts over (batch, heads), cond whole on every device.
void masked_softmax_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  const Shape& x = sbp::shape_of(g, n.inputs[0]);
  const size_t k = cond_dims(sbp::shape_of(g, n.inputs.back()));
  for (size_t d = 0; d + k < x.size(); ++d) {
    std::vector<Sbp> in(n.inputs.size(), Sbp::S(int64_t(d)));
    in.back() = Sbp::B();
    out.push_back(Signature{in, {Sbp::S(int64_t(d))}, Signature::Tweak::none, true});
  }
}

}  // namespace

bool masked_softmax_fits(const Shape& x, const Shape& mask) {
  const size_t k = cond_dims(mask);
  return !x.empty() && k > 0 && k <= x.size() && std::equal(mask.end() - int64_t(k), mask.end(), x.end() - int64_t(k));
}

OpDef masked_softmax_def() {
  return {"of.MaskedSoftmax", infer_masked_softmax, lower_masked_softmax, grad_masked_softmax, {int_attr("masked", 0, 1)},
          {sbp_rule("masked_softmax", masked_softmax_sbp), sbp_rule("masked_softmax_grad", masked_softmax_sbp)}};
}

OpDef log_softmax_def() {
  return {"LogSoftmax", infer_softmax, lower_softmax<kLogSoftmax>, grad_softmax<kLogSoftmax>, {int_attr("axis", -kMaxAxis, kMaxAxis)},
          {sbp_rule("log_softmax", sbp::other_axes), sbp_rule("log_softmax_grad", sbp::other_axes)}};
}
OpDef softmax_def() {
  return {"Softmax", infer_softmax, lower_softmax<kSoftmax>, grad_softmax<kSoftmax>, {int_attr("axis", -kMaxAxis, kMaxAxis)},
          {sbp_rule("softmax", sbp::other_axes), sbp_rule("softmax_grad", sbp::other_axes)}};
}

}  // namespace of::compiler
