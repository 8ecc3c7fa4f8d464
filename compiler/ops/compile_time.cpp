// SPDX-License-Identifier: Apache-2.0
// Shape, ConstantOfShape, Range, ScatterND, ReduceProd: the shape and mask
// arithmetic exporters write (ScatterND: torchvision's Swin Transformer
// fills its shifted windows' attention mask by slices; ReduceProd: x.std(dim) counts
// its elements from the shape). Plans have static shapes, so infer-shapes folds these into
// constants (const_eval.cpp) before asking their OpDef; one reached here computes from run-time
// data, which no kernel does yet. (Comparisons, logical ops, Cast, Trilu and Mod fold too, and
// also run: compare.cpp, reshape.cpp, trilu.cpp, binary.cpp.)
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_compile_time(OpCtx& c) {
  c.fail("computes from run-time data; of runs {} only on shapes and constants (folded at compile time)", c.node().op_type);
}

void lower_none(OpCtx&) {}

}  // namespace

OpDef constant_of_shape_def() { return {"ConstantOfShape", infer_compile_time, lower_none}; }
OpDef range_def() { return {"Range", infer_compile_time, lower_none}; }
OpDef reduce_prod_def() { return {"ReduceProd", infer_compile_time, lower_none, nullptr, {bool_attr("keepdims"), bool_attr("noop_with_empty_axes")}}; }
OpDef scatter_nd_def() { return {"ScatterND", infer_compile_time, lower_none}; }
OpDef shape_def() { return {"Shape", infer_compile_time, lower_none, nullptr, {int_attr("start", -kMaxInt, kMaxInt), int_attr("end", -kMaxInt, kMaxInt)}}; }

}  // namespace of::compiler
