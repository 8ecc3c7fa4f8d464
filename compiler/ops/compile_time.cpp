// SPDX-License-Identifier: Apache-2.0
// Shape, ConstantOfShape, Range, Cast, Equal, Less, Greater, Not, And, Or: the shape arithmetic
// exporters write. Plans have static shapes, so infer-shapes folds these into constants
// (const_eval.cpp) before asking their OpDef; one reached here computes from run-time data,
// which no kernel does yet (Cast between equal dtypes excepted).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_compile_time(OpCtx& c) {
  c.fail("computes from run-time data; of runs {} only on shapes and constants (folded at compile time)", c.node().op_type);
}

void lower_none(OpCtx&) {}

// Cast to the dtype a tensor already has is a copy (exporters write it around masks).
void infer_cast(OpCtx& c) {
  c.expect_arity(1, 1);
  const int64_t to = c.attrs().get_int("to", 0);
  const DType want = to == 1 ? DType::f32 : to == 7 ? DType::i64 : to == 6 ? DType::i32 : to == 9 ? DType::bool_ : DType::f16;
  if (want != c.in(0).dtype || (to != 1 && to != 7 && to != 6 && to != 9))
    c.fail("casts a run-time {} tensor to ONNX type {}; only compile-time casts and casts to the same dtype are supported",
           dtype_name(c.in(0).dtype), to);
  c.out(0) = c.in(0);
}

void lower_copy(OpCtx& c) { c.set_kernel("copy"); }

void grad_copy(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("CastGrad", "copy", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

}  // namespace

OpDef and_def() { return {"And", infer_compile_time, lower_none}; }
OpDef cast_def() { return {"Cast", infer_cast, lower_copy, grad_copy}; }
OpDef constant_of_shape_def() { return {"ConstantOfShape", infer_compile_time, lower_none}; }
OpDef equal_def() { return {"Equal", infer_compile_time, lower_none}; }
OpDef greater_def() { return {"Greater", infer_compile_time, lower_none}; }
OpDef less_def() { return {"Less", infer_compile_time, lower_none}; }
OpDef not_def() { return {"Not", infer_compile_time, lower_none}; }
OpDef or_def() { return {"Or", infer_compile_time, lower_none}; }
OpDef range_def() { return {"Range", infer_compile_time, lower_none}; }
OpDef shape_def() { return {"Shape", infer_compile_time, lower_none}; }

}  // namespace of::compiler
