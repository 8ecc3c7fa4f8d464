// SPDX-License-Identifier: Apache-2.0
// Relu, Sigmoid, Tanh: element-wise, output shape = input shape.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_unary(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  c.out(0) = c.in(0);
}

template <const char* kKernel>
void lower_unary(OpCtx& c) { c.set_kernel(kKernel); }

constexpr char kRelu[] = "relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh";

// All three gradients read the forward output y (so a ReLU fused into its producer still works).
template <const char* kKernel>
void grad_unary(GradCtx& g) {
  if (g.wants(0))
    g.add_in_grad(0, g.emit(g.node().op_type + "Grad", std::string(kKernel) + "_grad", {g.out_grad(0), g.out(0)}, {}, g.desc(g.in(0))));
}

}  // namespace

OpDef relu_def() {
  return {"Relu", infer_unary, lower_unary<kRelu>, grad_unary<kRelu>, {},
          {sbp_rule("relu", sbp::elementwise), sbp_rule("relu_grad", sbp::elementwise)}};
}
OpDef sigmoid_def() {
  return {"Sigmoid", infer_unary, lower_unary<kSigmoid>, grad_unary<kSigmoid>, {},
          {sbp_rule("sigmoid", sbp::elementwise), sbp_rule("sigmoid_grad", sbp::elementwise)}};
}
OpDef tanh_def() {
  return {"Tanh", infer_unary, lower_unary<kTanh>, grad_unary<kTanh>, {},
          {sbp_rule("tanh", sbp::elementwise), sbp_rule("tanh_grad", sbp::elementwise)}};
}

}  // namespace of::compiler
