// SPDX-License-Identifier: Apache-2.0
// 2-D sliding-window geometry shared by Conv, MaxPool and AveragePool: reads the ONNX window
// attributes, resolves auto_pad into explicit pads and computes the output height and width.
#pragma once

#include <array>

#include "compiler/ops/op_def.h"

namespace of::compiler {

struct Window2d {
  std::array<int64_t, 2> kernel{};         // kH, kW
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{};           // top, left, bottom, right (ONNX's begin..., end... order)
  std::array<int64_t, 2> out{};            // oH, oW
};

// `input` is [N,C,H,W]; `kernel` is [kH,kW]. Reads strides, dilations, pads and auto_pad from the
// node. ceil_mode (pooling only) rounds the output size up, dropping a window that would start
// in the end padding.
Window2d window_2d(const OpCtx& c, const Shape& input, std::array<int64_t, 2> kernel, bool ceil_mode);

// Fails unless input 0 has rank 4; `what` names the op family ("convolution", "max pooling").
void expect_2d(const OpCtx& c, std::string_view what);

}  // namespace of::compiler
