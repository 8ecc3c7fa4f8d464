// SPDX-License-Identifier: Apache-2.0
// Window geometry (see window.h), following the ONNX Conv/MaxPool/AveragePool output formulas.
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

std::vector<int64_t> Window::pads_attr() const {
  const size_t skip = axes == 3 ? 0 : 1;
  std::vector<int64_t> p(pads.begin() + skip, pads.begin() + 3);
  p.insert(p.end(), pads.begin() + 3 + skip, pads.end());
  return p;
}

int expect_spatial_rank(const OpCtx& c, std::string_view what) {
  const Shape& x = c.in(0).shape;
  if (x.size() < 3 || x.size() > 5)
    c.fail("only 1-D, 2-D and 3-D {} is supported: input 0 has shape {}, expected rank 3 [N,C,L], 4 [N,C,H,W] or 5 "
           "[N,C,D,H,W]", what, shape_str(x));
  return int(x.size()) - 2;
}

Shape window_output(const Shape& input, int64_t channels, const Window& w) {
  Shape out = {input[0], channels};
  out.insert(out.end(), w.out.end() - w.axes, w.out.end());
  return out;
}

void expand_by_planes_then_depth(ExpandCtx& c, const WindowStage& plane, const WindowStage& depth) {
  const Shape x = c.shape(c.input(0)), y = c.shape(c.output(0));
  ValueId v = c.input(0);
  if (plane) v = plane(c.emit("Reshape", {v, c.ints({x[0], x[1] * x[2], x[3], x[4]})}));
  if (depth) v = depth(c.emit("Reshape", {v, c.ints({x[0], x[1], x[2], y[3] * y[4]})}));
  c.emit("Reshape", {v, c.ints(y)}, {}, c.output(0));
}

std::vector<int64_t> batch_and_spatial_axes(size_t rank) {
  std::vector<int64_t> axes = {0};
  for (size_t i = 2; i < rank; ++i) axes.push_back(int64_t(i));
  return axes;
}

Window window_of(const OpCtx& c, const Shape& input, const std::vector<int64_t>& kernel, bool ceil_mode) {
  Window w;
  w.axes = int(input.size()) - 2;
  const size_t axes = size_t(w.axes), lead = 3 - axes;  // leading axes of size 1
  std::vector<int64_t> s = ints_attr(c, "strides", axes, 1, 1);
  std::vector<int64_t> d = ints_attr(c, "dilations", axes, 1, 1);
  std::vector<int64_t> p = ints_attr(c, "pads", 2 * axes, 0, 0);
  std::string auto_pad = c.attrs().get_str("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.fail("attribute auto_pad = '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", auto_pad);
  if (auto_pad != "NOTSET" && std::any_of(p.begin(), p.end(), [](int64_t v) { return v != 0; }))
    c.fail("attributes pads = [{}] and auto_pad = {} are both set", fmt::join(p, ","), auto_pad);

  static constexpr const char* kAxis[] = {"depth", "height", "width"};
  for (size_t i = 0; i < axes; ++i) {
    const size_t a = lead + i;  // the axis of the 3-D window
    if (kernel[i] < 1) c.fail("kernel {} is {}, expected >= 1", kAxis[a], kernel[i]);
    int64_t in = input[2 + i], extent = (kernel[i] - 1) * d[i] + 1;
    int64_t begin = p[i], end = p[i + axes];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output ceil(in / stride); the odd pad element goes at the end (UPPER) or the beginning (LOWER).
      int64_t out = (in + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + extent - in);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    }
    int64_t padded = in + begin + end;
    if (padded < extent)
      c.fail("along the {}: the padded input size {} (input {}, pads {}+{}) is smaller than the window {}"
             " (kernel {}, dilation {})", kAxis[a], padded, in, begin, end, extent, kernel[i], d[i]);
    int64_t span = padded - extent;
    int64_t out = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
    if (ceil_mode && (out - 1) * s[i] >= in + begin) --out;  // last window would start in the end padding
    w.kernel[a] = kernel[i];
    w.strides[a] = s[i];
    w.dilations[a] = d[i];
    w.pads[a] = begin;
    w.pads[a + 3] = end;
    w.out[a] = out;
  }
  return w;
}

}  // namespace of::compiler
