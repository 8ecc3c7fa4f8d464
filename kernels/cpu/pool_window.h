// SPDX-License-Identifier: Apache-2.0
// 2-D pooling window geometry shared by the pooling kernels (pool.cpp) and their gradients
// (pool_grad.cpp): per output row and column, which kernel taps land inside the input.
#pragma once

#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace of::kernels::cpu {

// For one output index: kernel taps [lo, hi) read inside the input; `start` is the first input
// index of the window (may be negative) and `padded` the window length clipped to the padded
// input's end (count_include_pad=1 divides by it).
struct Window {
  int64_t lo = 0, hi = 0, start = 0, padded = 0;
};

struct Axis {
  int64_t in = 0, out = 0, kernel = 1, stride = 1, pad_begin = 0, pad_end = 0, dilation = 1;
};

std::vector<Window> windows(const Axis& a);

// Reads kernel_shape/strides/pads/dilations, checks that the pooled shape y is the floor- or
// ceil-mode size of x (both NCHW; the compiler resolved ceil_mode into y) and returns the row
// and column axes. `y_what` names y in errors ("output 0", "input 0 (dy)").
std::pair<Axis, Axis> pool_axes(const KernelConfig& cfg, const char* name, const Shape& x,
                                const Shape& y, const char* y_what, bool dilations);

}  // namespace of::kernels::cpu
