// SPDX-License-Identifier: Apache-2.0
// 2-D sliding-window geometry shared by Conv, MaxPool and AveragePool: reads the ONNX window
// attributes, resolves auto_pad into explicit pads and computes the output height and width. A
// 1-D window (nn.Conv1d, MaxPool1d, AvgPool1d on [N,C,L]) is the 2-D one of height 1: its
// attributes of one axis become 2-D ones (kernel, stride and dilation 1, no pads along the
// height), which is how the kernels run it.
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

// `input` is [N,C,H,W] (or [N,C,L]); `kernel` is [kH,kW] (or [1,k]). Reads strides, dilations, pads
// and auto_pad from the node (one or two axes of them, as the input has). ceil_mode (pooling only) rounds the output size up, dropping a window that would start
// in the end padding.
Window2d window_2d(const OpCtx& c, const Shape& input, std::array<int64_t, 2> kernel, bool ceil_mode);

// Fails unless input 0 has rank 3 or 4; `what` names the op family ("convolution", "max pooling").
// Returns the number of spatial axes (1 or 2).
int expect_1d_or_2d(const OpCtx& c, std::string_view what);

// The output shape [N, M, oH, oW] (or [N, M, oW] for a 1-D window).
Shape window_output(const Shape& input, int64_t channels, const Window2d& w);

}  // namespace of::compiler
