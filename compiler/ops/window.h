// SPDX-License-Identifier: Apache-2.0
// Sliding-window geometry shared by Conv, MaxPool and AveragePool over 1, 2 or 3 spatial axes:
// reads the ONNX window attributes, resolves auto_pad into explicit pads and computes the output
// size. A window is held as a 3-D one (depth, height, width): fewer axes are the leading ones of
// size 1 (kernel, stride and dilation 1, no pads). The kernels run a 1-D window (nn.Conv1d,
// MaxPool1d on [N,C,L]) as a 2-D one of height 1 and take two axes of attributes for it; a 3-D
// window (nn.Conv3d, MaxPool3d on [N,C,D,H,W]) takes three.
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "compiler/ops/op_def.h"

namespace of::compiler {

struct Window {
  int axes = 2;                           // spatial axes of the input: 1, 2 or 3
  std::array<int64_t, 3> kernel{1, 1, 1};  // kD, kH, kW
  std::array<int64_t, 3> strides{1, 1, 1};
  std::array<int64_t, 3> dilations{1, 1, 1};
  std::array<int64_t, 6> pads{};          // front, top, left, back, bottom, right (ONNX's begin..., end... order)
  std::array<int64_t, 3> out{1, 1, 1};     // oD, oH, oW

  // The attributes as the kernels take them: two axes (height, width) for a 1-D or 2-D window,
  // three for a 3-D one; pads begin..., end....
  std::vector<int64_t> kernel_attr() const { return axis_attr(kernel); }
  std::vector<int64_t> strides_attr() const { return axis_attr(strides); }
  std::vector<int64_t> dilations_attr() const { return axis_attr(dilations); }
  std::vector<int64_t> pads_attr() const;

 private:
  std::vector<int64_t> axis_attr(const std::array<int64_t, 3>& v) const {
    return {v.begin() + (axes == 3 ? 0 : 1), v.end()};
  }
};

// `input` is [N,C,spatial...] with 1-3 spatial axes; `kernel` holds one size per spatial axis.
// Reads strides, dilations, pads and auto_pad from the node (one value per spatial axis, two for
// pads). ceil_mode (pooling only) rounds the output size up, dropping a window that would start
// in the end padding.
Window window_of(const OpCtx& c, const Shape& input, const std::vector<int64_t>& kernel, bool ceil_mode);

// Fails unless input 0 has rank 3, 4 or 5; `what` names the op family ("convolution", "max
// pooling"). Returns the number of spatial axes (1, 2 or 3).
int expect_spatial_rank(const OpCtx& c, std::string_view what);

// The output shape [N, M, out...] over the input's spatial axes.
Shape window_output(const Shape& input, int64_t channels, const Window& w);

// A 3-D window op as two 2-D ones (the composites of 3-D pooling and resizing, whose windows and
// weights separate by axes): the composite's input [N,C,D,H,W] viewed as [N, C*D, H, W] goes
// through `plane` (height and width), its result viewed as [N, C, D, oH*oW] through `depth` (a
// [kD, 1] window), into the composite's output [N, C, oD, oH, oW]. Either stage may be empty
// (skipped: a window of one position along its axes).
using WindowStage = std::function<ValueId(ValueId)>;
void expand_by_planes_then_depth(ExpandCtx& c, const WindowStage& plane, const WindowStage& depth);

// The axes a bias's gradient sums over: the batch (0) and the spatial ones of a rank-`rank` tensor.
std::vector<int64_t> batch_and_spatial_axes(size_t rank);

}  // namespace of::compiler
