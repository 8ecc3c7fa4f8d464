// SPDX-License-Identifier: Apache-2.0
// Softmax and LogSoftmax (opset 13: along one axis, default -1); the kernel gets a non-negative axis.
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

}  // namespace

OpDef log_softmax_def() {
  return {"LogSoftmax", infer_softmax, lower_softmax<kLogSoftmax>, grad_softmax<kLogSoftmax>, {int_attr("axis", -kMaxAxis, kMaxAxis)},
          {sbp_rule("log_softmax", sbp::other_axes), sbp_rule("log_softmax_grad", sbp::other_axes)}};
}
OpDef softmax_def() {
  return {"Softmax", infer_softmax, lower_softmax<kSoftmax>, grad_softmax<kSoftmax>, {int_attr("axis", -kMaxAxis, kMaxAxis)},
          {sbp_rule("softmax", sbp::other_axes), sbp_rule("softmax_grad", sbp::other_axes)}};
}

}  // namespace of::compiler
