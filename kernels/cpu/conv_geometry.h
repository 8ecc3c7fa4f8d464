// SPDX-License-Identifier: Apache-2.0
// Convolution geometry shared by conv (conv.cpp) and its gradients (conv_grad.cpp): the
// attribute checks, and im2col / col2im for one (batch, group) block of C/g input channels.
// Held as a 3-D convolution (depth, height, width): a 2-D one has depth 1 (X [N,C,H,W], two axes
// of attributes), a 1-D one depth and height 1 (X [N,C,L], attributes of height 1 and width, as
// the compiler lowers it); a 3-D one (X [N,C,D,H,W]) takes three axes of attributes.
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
  int64_t n = 0, c = 0, d = 1, h = 0, w = 0, m = 0, kd = 1, kh = 0, kw = 0, od = 1, oh = 0, ow = 0;
  int64_t group = 1, cg = 0, mg = 0;
  int64_t stride_d = 1, stride_h = 1, stride_w = 1, pad_f = 0, pad_t = 0, pad_l = 0, dil_d = 1, dil_h = 1, dil_w = 1;
  // 1x1(x1), stride 1, unpadded: an input block already is its column matrix (no im2col).
  bool direct = false;
  int axes = 2;  // spatial axes of X: 1 ([N,C,L], run as height 1), 2 or 3
  std::vector<Range> depths, rows, cols;  // per kernel slice / row / column: outputs inside the input

  int64_t kdim() const { return cg * kd * kh * kw; }  // rows of the column matrix
  int64_t spatial() const { return od * oh * ow; }     // its columns
  int64_t volume() const { return d * h * w; }         // input positions per channel
  // The thread workspace one block's im2col needs (none when direct).
  size_t column_bytes() const { return direct ? 0 : size_t(kdim() * spatial()) * sizeof(float); }
  Shape y_shape() const {
    return axes == 1 ? Shape{n, m, ow} : axes == 2 ? Shape{n, m, oh, ow} : Shape{n, m, od, oh, ow};
  }
};

// Checks X [N,C,spatial...] and W [M,C/g,kernel...] (1-3 spatial axes) against the attributes
// (kernel_shape, strides, pads, dilations, group) and returns the geometry; throws of::Error
// naming cfg.node and `kernel`.
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
// x [N, C, spatial...] += bias[c] on every channel (conv_grad_data's bias).
void add_channel_bias(const ConvGeometry& g, const float* bias, float* x);

// col [kdim, OD*OH*OW] from the C/g channels at x (zeros where a tap reads padding).
void im2col(const ConvGeometry& g, const float* x, float* col);
// The column matrix of input block (batch b, group grp) of x: the block itself when g.direct,
// else im2col of it into `workspace`.
const float* columns(const ConvGeometry& g, const float* x, int64_t b, int64_t grp, float* workspace);
// The adjoint of im2col: adds each column entry into the input position it was read from.
void col2im_add(const ConvGeometry& g, const float* col, float* x);

}  // namespace of::kernels::cpu
