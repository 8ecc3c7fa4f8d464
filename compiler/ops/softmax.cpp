// SPDX-License-Identifier: Apache-2.0
// Softmax and LogSoftmax (opset 13: along one axis, default -1); the kernel gets a non-negative axis.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

int64_t softmax_axis(const OpCtx& c) {
  return c.axis(c.attrs().get_int("axis", -1), int64_t(c.in(0).shape.size()));
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

}  // namespace

OpDef log_softmax_def() { return {"LogSoftmax", infer_softmax, lower_softmax<kLogSoftmax>}; }
OpDef softmax_def() { return {"Softmax", infer_softmax, lower_softmax<kSoftmax>}; }

}  // namespace of::compiler
