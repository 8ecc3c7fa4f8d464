// SPDX-License-Identifier: Apache-2.0
// The OpDef constructors, one per supported operator; registry.cpp lists them alphabetically.
#pragma once

#include "compiler/ops/op_def.h"

namespace of::compiler {

OpDef add_def();                  // binary.cpp
OpDef sub_def();
OpDef mul_def();
OpDef div_def();
OpDef batch_norm_def();           // batch_norm.cpp
OpDef concat_def();               // concat.cpp
OpDef conv_def();                 // conv.cpp
OpDef delay_def();                // delay.cpp (custom op of.test.Delay)
OpDef gather_def();               // gather.cpp
OpDef gemm_def();                 // gemm.cpp
OpDef layer_norm_def();           // layer_norm.cpp
OpDef matmul_def();               // matmul.cpp
OpDef average_pool_def();         // pool.cpp
OpDef global_average_pool_def();
OpDef max_pool_def();
OpDef flatten_def();              // reshape.cpp
OpDef identity_def();
OpDef reshape_def();
OpDef log_softmax_def();          // softmax.cpp
OpDef softmax_def();
OpDef transpose_def();            // transpose.cpp
OpDef relu_def();                 // unary.cpp
OpDef sigmoid_def();
OpDef tanh_def();

}  // namespace of::compiler
