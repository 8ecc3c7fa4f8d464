// SPDX-License-Identifier: Apache-2.0
// 2-D window geometry (see window.h), following the ONNX Conv/MaxPool/AveragePool output formulas.
#include "compiler/ops/window.h"

#include <fmt/format.h>

#include <algorithm>

namespace of::compiler {
namespace {

// An attribute of exactly `n` integers, each >= lo; `fallback` when absent.
std::vector<int64_t> ints_attr(const OpCtx& c, const char* name, size_t n, int64_t lo, int64_t fallback) {
  if (!c.attrs().has(name)) return std::vector<int64_t>(n, fallback);
  std::vector<int64_t> v = c.attrs().get_ints(name);
  if (v.size() != n) c.fail("attribute {} has {} values, expected {}", name, v.size(), n);
  for (int64_t x : v)
    if (x < lo) c.fail("attribute {} = [{}] must hold values >= {}", name, fmt::join(v, ","), lo);
  return v;
}

}  // namespace

int expect_1d_or_2d(const OpCtx& c, std::string_view what) {
  const Shape& x = c.in(0).shape;
  if (x.size() != 3 && x.size() != 4)
    c.fail("only 1-D and 2-D {} is supported: input 0 has shape {}, expected rank 3 [N,C,L] or 4 [N,C,H,W]", what,
           shape_str(x));
  return int(x.size()) - 2;
}

Shape window_output(const Shape& input, int64_t channels, const Window2d& w) {
  if (input.size() == 3) return {input[0], channels, w.out[1]};
  return {input[0], channels, w.out[0], w.out[1]};
}

Window2d window_2d(const OpCtx& c, const Shape& input_given, std::array<int64_t, 2> kernel, bool ceil_mode) {
  Window2d w;
  w.kernel = kernel;
  const bool one_d = input_given.size() == 3;
  const Shape input = one_d ? Shape{input_given[0], input_given[1], 1, input_given[2]} : input_given;
  const size_t axes = one_d ? 1 : 2;
  std::vector<int64_t> s = ints_attr(c, "strides", axes, 1, 1);
  std::vector<int64_t> d = ints_attr(c, "dilations", axes, 1, 1);
  std::vector<int64_t> p = ints_attr(c, "pads", 2 * axes, 0, 0);
  if (one_d) {  // height 1: kernel, stride and dilation 1 and no pads along it
    s = {1, s[0]};
    d = {1, d[0]};
    p = {0, p[0], 0, p[1]};
  }
  std::string auto_pad = c.attrs().get_str("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.fail("attribute auto_pad = '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", auto_pad);
  if (auto_pad != "NOTSET" && p != std::vector<int64_t>(4, 0))
    c.fail("attributes pads = [{}] and auto_pad = {} are both set", fmt::join(p, ","), auto_pad);

  static constexpr const char* kAxis[] = {"height", "width"};
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1) c.fail("kernel {} is {}, expected >= 1", kAxis[i], kernel[i]);
    w.strides[i] = s[i];
    w.dilations[i] = d[i];
    int64_t in = input[2 + i], extent = (kernel[i] - 1) * d[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output ceil(in / stride); the odd pad element goes at the end (UPPER) or the beginning (LOWER).
      int64_t out = (in + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + extent - in);
      int64_t begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      p[i] = begin;
      p[i + 2] = total - begin;
    }
    w.pads[i] = p[i];
    w.pads[i + 2] = p[i + 2];
    int64_t padded = in + p[i] + p[i + 2];
    if (padded < extent)
      c.fail("along the {}: the padded input size {} (input {}, pads {}+{}) is smaller than the window {}"
             " (kernel {}, dilation {})", kAxis[i], padded, in, p[i], p[i + 2], extent, kernel[i], d[i]);
    int64_t span = padded - extent;
    int64_t out = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
    if (ceil_mode && (out - 1) * s[i] >= in + p[i]) --out;  // last window would start in the end padding
    w.out[i] = out;
  }
  return w;
}

}  // namespace of::compiler
