// SPDX-License-Identifier: Apache-2.0
// 2-D convolution geometry shared by conv (conv.cpp) and its gradients (conv_grad.cpp): the
// attribute checks, and im2col / col2im for one (batch, group) block of C/g input planes.
#pragma once

#include <string_view>
#include <vector>

#include "kernels/kernel.h"

namespace of::kernels::cpu {

// Outputs o in [lo, hi) read input index o*stride + offset inside [0, len).
struct Range {
  int64_t lo = 0, hi = 0;
};

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t group = 1, cg = 0, mg = 0;
  int64_t stride_h = 1, stride_w = 1, pad_t = 0, pad_l = 0, dil_h = 1, dil_w = 1;
  // 1x1, stride 1, unpadded: an input block already is its column matrix (no im2col).
  bool direct = false;
  bool one_d = false;  // X [N,C,L] and W [M,C/g,k], run as height 1 (cpu::as_2d_window)
  std::vector<Range> rows, cols;  // per kernel row / column: outputs inside the input

  int64_t kdim() const { return cg * kh * kw; }  // rows of the column matrix
  int64_t spatial() const { return oh * ow; }    // its columns
  // The thread workspace one block's im2col needs (none when direct).
  size_t column_bytes() const { return direct ? 0 : size_t(kdim() * spatial()) * sizeof(float); }
  Shape y_shape() const { return one_d ? Shape{n, m, ow} : Shape{n, m, oh, ow}; }
};

// Checks X [N,C,H,W] and W [M,C/g,kH,kW] (or [N,C,L] and [M,C/g,k], as height 1) against the attributes (kernel_shape, strides, pads,
// dilations, group) and returns the geometry; throws of::Error naming cfg.node and `kernel`.
ConvGeometry conv_geometry(const KernelConfig& cfg, std::string_view kernel, const Shape& x,
                           const Shape& w);

// conv (X, W[, bias]) -> Y: the geometry, whether a bias is given and whether a ReLU is fused.
struct ConvForward {
  ConvGeometry g;
  bool bias = false, relu = false;
};
ConvForward conv_forward(const KernelConfig& cfg);

// The geometry of conv_grad_data (dY, W[, bias]) -> dX and conv_grad_weight (dY, X) -> dW: dY's
// shape is checked against the one X's shape implies; several X sizes give the same dY when
// strides > 1, which is why dX's shape comes from the compiler. conv_grad_data is also
// ConvTranspose's forward pass (Y = the transposed convolution of X), whose bias [C of dX] it
// adds after the product.
ConvGeometry conv_grad_geometry(const KernelConfig& cfg, const char* name, bool x_is_output);
// x [N, C, H, W] += bias[c] on every plane (conv_grad_data's bias).
void add_channel_bias(const ConvGeometry& g, const float* bias, float* x);

// col [kdim, OH*OW] from the C/g planes at x (zeros where a tap reads padding).
void im2col(const ConvGeometry& g, const float* x, float* col);
// The column matrix of input block (batch b, group grp) of x: the block itself when g.direct,
// else im2col of it into `workspace`.
const float* columns(const ConvGeometry& g, const float* x, int64_t b, int64_t grp, float* workspace);
// The adjoint of im2col: adds each column entry into the input position it was read from.
void col2im_add(const ConvGeometry& g, const float* col, float* x);

}  // namespace of::kernels::cpu
