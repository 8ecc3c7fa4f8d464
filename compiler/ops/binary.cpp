// SPDX-License-Identifier: Apache-2.0
// Add, Sub, Mul, Div: element-wise with numpy multidirectional broadcasting (opset 13+).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_binary(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  c.expect_float(1);
  c.out(0) = TensorDesc{broadcast_shapes(c, c.in(0).shape, c.in(1).shape), DType::f32};
}

template <const char* kKernel>
void lower_binary(OpCtx& c) { c.set_kernel(kKernel); }

constexpr char kAdd[] = "add", kSub[] = "sub", kMul[] = "mul", kDiv[] = "div";

}  // namespace

OpDef add_def() { return {"Add", infer_binary, lower_binary<kAdd>}; }
OpDef sub_def() { return {"Sub", infer_binary, lower_binary<kSub>}; }
OpDef mul_def() { return {"Mul", infer_binary, lower_binary<kMul>}; }
OpDef div_def() { return {"Div", infer_binary, lower_binary<kDiv>}; }

}  // namespace of::compiler
