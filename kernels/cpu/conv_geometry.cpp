// SPDX-License-Identifier: Apache-2.0
// Convolution geometry, im2col and col2im (see conv_geometry.h).
#include "kernels/cpu/conv_geometry.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/check.h"

namespace of::kernels::cpu {

namespace {

// ceil(a / b) for b > 0 and any sign of a.
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// The outputs o in [0, out_len) whose input o * stride + offset lies in [0, len): in closed form,
// since out_len comes from attributes (a loop over it would run as long as they say).
Range valid_outputs(int64_t len, int64_t stride, int64_t offset, int64_t out_len) {
  const int64_t lo = std::max<int64_t>(0, ceil_div(-offset, stride));
  const int64_t hi = std::min<int64_t>(out_len, ceil_div(len - offset, stride));
  return hi > lo ? Range{lo, hi} : Range{0, 0};
}

}  // namespace

ConvGeometry conv_geometry(const KernelConfig& cfg, std::string_view kernel, const Shape& x_given,
                           const Shape& wt_given) {
  ConvGeometry g;
  if (x_given.size() != wt_given.size() || x_given.size() < 3 || x_given.size() > 5)
    fail(where_of(cfg), "{}: only 1-D, 2-D and 3-D convolution is supported: X {}, W {}", kernel,
         shape_str(x_given), shape_str(wt_given));
  g.axes = int(x_given.size()) - 2;
  const Shape x = as_3d_window(x_given), wt = as_3d_window(wt_given);
  g.n = x[0], g.c = x[1], g.d = x[2], g.h = x[3], g.w = x[4];
  g.m = wt[0], g.kd = wt[2], g.kh = wt[3], g.kw = wt[4];
  if (g.c < 1 || g.kd < 1 || g.kh < 1 || g.kw < 1)
    fail(where_of(cfg), "{}: empty channels or kernel: X {}, W {}", kernel, shape_str(x_given),
         shape_str(wt_given));
  g.group = cfg.attrs.get_int("group", 1);
  if (g.group < 1 || g.c % g.group != 0 || g.m % g.group != 0 || wt[1] != g.c / g.group)
    fail(where_of(cfg), "{}: X {} and W {} do not fit group={}", kernel, shape_str(x_given),
         shape_str(wt_given), g.group);
  g.cg = g.c / g.group;
  g.mg = g.m / g.group;
  // Attributes of two axes (height, width) for a 1-D or 2-D convolution, three for a 3-D one.
  const size_t n = g.axes == 3 ? 3 : 2, lead = 3 - n;
  const std::vector<int64_t> k_given(wt.end() - int64_t(n), wt.end());
  if (get_ints_n(cfg, kernel, "kernel_shape", n, k_given) != k_given)
    fail(where_of(cfg), "{}: kernel_shape differs from W {}", kernel, shape_str(wt_given));
  const auto st = get_ints_n(cfg, kernel, "strides", n, std::vector<int64_t>(n, 1));
  const auto pads = get_ints_n(cfg, kernel, "pads", 2 * n, std::vector<int64_t>(2 * n, 0));
  const auto dil = get_ints_n(cfg, kernel, "dilations", n, std::vector<int64_t>(n, 1));
  // Bounded so that no sum or product below can overflow (dims are bounded by the memory they fill).
  constexpr int64_t kMaxAttr = int64_t(1) << 31;
  auto outside = [&](int64_t v, int64_t lo) { return v < lo || v > kMaxAttr; };
  for (size_t i = 0; i < n; ++i)
    if (outside(st[i], 1) || outside(dil[i], 1) || outside(pads[i], 0) || outside(pads[n + i], 0))
      fail(where_of(cfg), "{}: strides and dilations must be from 1 to 2^31, pads from 0 to 2^31", kernel);
  for (int64_t v : {g.kd, g.kh, g.kw, g.d, g.h, g.w})
    if (v > kMaxAttr) fail(where_of(cfg), "{}: X {} or W {} is beyond 2^31 along an axis", kernel, shape_str(x_given), shape_str(wt_given));
  // The three axes' attributes: the leading ones of a 1-D or 2-D convolution are 1 (pads 0).
  std::array<int64_t, 3> s3{1, 1, 1}, d3{1, 1, 1}, begin{0, 0, 0}, end{0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    s3[lead + i] = st[i];
    d3[lead + i] = dil[i];
    begin[lead + i] = pads[i];
    end[lead + i] = pads[n + i];
  }
  g.stride_d = s3[0], g.stride_h = s3[1], g.stride_w = s3[2];
  g.dil_d = d3[0], g.dil_h = d3[1], g.dil_w = d3[2];
  g.pad_f = begin[0], g.pad_t = begin[1], g.pad_l = begin[2];
  const std::array<int64_t, 3> in{g.d, g.h, g.w}, k{g.kd, g.kh, g.kw};
  std::array<int64_t, 3> out{};
  for (size_t a = 0; a < 3; ++a) {
    const int64_t span = in[a] + begin[a] + end[a] - d3[a] * (k[a] - 1) - 1;
    if (span < 0)
      fail(where_of(cfg), "{}: kernel {} is larger than padded input {}", kernel, shape_str(wt_given), shape_str(x_given));
    out[a] = span / s3[a] + 1;
  }
  g.od = out[0], g.oh = out[1], g.ow = out[2];
  g.direct = g.kd == 1 && g.kh == 1 && g.kw == 1 && g.stride_d == 1 && g.stride_h == 1 && g.stride_w == 1 &&
             std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  for (int64_t t = 0; t < g.kd; ++t) g.depths.push_back(valid_outputs(g.d, g.stride_d, t * g.dil_d - g.pad_f, g.od));
  for (int64_t t = 0; t < g.kh; ++t) g.rows.push_back(valid_outputs(g.h, g.stride_h, t * g.dil_h - g.pad_t, g.oh));
  for (int64_t t = 0; t < g.kw; ++t) g.cols.push_back(valid_outputs(g.w, g.stride_w, t * g.dil_w - g.pad_l, g.ow));
  return g;
}

ConvForward conv_forward(const KernelConfig& cfg) {
  check_arity(cfg, "conv", 2, 3, 1);
  check_dtypes(cfg, "conv", DType::f32);
  ConvForward f;
  f.relu = fused_relu(cfg, "conv");
  f.g = conv_geometry(cfg, "conv", cfg.inputs[0].shape, cfg.inputs[1].shape);
  check_output_shape(cfg, "conv", 0, f.g.y_shape());
  if (cfg.inputs.size() == 3) {
    if (cfg.inputs[2].shape != Shape{f.g.m})
      fail(where_of(cfg), "conv: bias {} must be [{}]", shape_str(cfg.inputs[2].shape), f.g.m);
    f.bias = true;
  }
  return f;
}

ConvGeometry conv_grad_geometry(const KernelConfig& cfg, const char* name, bool x_is_output) {
  check_arity(cfg, name, 2, x_is_output ? 3 : 2, 1);  // conv_grad_data: a bias for ConvTranspose
  check_dtypes(cfg, name, DType::f32);
  const Shape& x = x_is_output ? cfg.outputs[0].shape : cfg.inputs[1].shape;
  const Shape& w = x_is_output ? cfg.inputs[1].shape : cfg.outputs[0].shape;
  ConvGeometry g = conv_geometry(cfg, name, x, w);
  check_input_shape(cfg, name, 0, "dy", g.y_shape());
  if (cfg.inputs.size() == 3) check_input_shape(cfg, name, 2, "bias", {g.c});
  return g;
}

void add_channel_bias(const ConvGeometry& g, const float* bias, float* x) {
  const int64_t volume = g.volume();
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t c = 0; c < g.c; ++c) {
      float* p = x + (b * g.c + c) * volume;
      const float v = bias[c];
      for (int64_t i = 0; i < volume; ++i) p[i] += v;
    }
}

namespace {

// One tap (ki, kj) of the 2-D slice `plane` [H, W] into dst [OH, OW] (zeros where it reads padding).
void im2col_slice(const ConvGeometry& g, const float* plane, int64_t ki, int64_t kj, float* dst_slice) {
  const int64_t ow = g.ow;
  const Range rr = g.rows[size_t(ki)], cr = g.cols[size_t(kj)];
  const int64_t off_w = kj * g.dil_w - g.pad_l;
  std::fill(dst_slice, dst_slice + rr.lo * ow, 0.0f);
  for (int64_t o = rr.lo; o < rr.hi; ++o) {
    const float* src = plane + (o * g.stride_h + ki * g.dil_h - g.pad_t) * g.w + off_w;
    float* dst = dst_slice + o * ow;
    std::fill(dst, dst + cr.lo, 0.0f);
    if (g.stride_w == 1) {
      std::memcpy(dst + cr.lo, src + cr.lo, (cr.hi - cr.lo) * sizeof(float));
    } else {
      for (int64_t p = cr.lo; p < cr.hi; ++p) dst[p] = src[p * g.stride_w];
    }
    std::fill(dst + cr.hi, dst + ow, 0.0f);
  }
  std::fill(dst_slice + rr.hi * ow, dst_slice + g.oh * ow, 0.0f);
}

// The adjoint of im2col_slice: adds src [OH, OW] into the positions of `plane` it was read from.
void col2im_slice(const ConvGeometry& g, const float* src_slice, int64_t ki, int64_t kj, float* plane) {
  const Range rr = g.rows[size_t(ki)], cr = g.cols[size_t(kj)];
  const int64_t off_w = kj * g.dil_w - g.pad_l;
  for (int64_t o = rr.lo; o < rr.hi; ++o) {
    float* dst = plane + (o * g.stride_h + ki * g.dil_h - g.pad_t) * g.w + off_w;
    const float* src = src_slice + o * g.ow;
    for (int64_t p = cr.lo; p < cr.hi; ++p) dst[p * g.stride_w] += src[p];
  }
}

}  // namespace

void im2col(const ConvGeometry& g, const float* x, float* col) {
  const int64_t slice = g.oh * g.ow, spatial = g.spatial(), plane = g.h * g.w;
  for (int64_t c = 0; c < g.cg; ++c) {
    const float* volume = x + c * g.volume();
    for (int64_t kz = 0; kz < g.kd; ++kz) {
      const Range dr = g.depths[size_t(kz)];
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj, col += spatial) {
          std::fill(col, col + dr.lo * slice, 0.0f);
          for (int64_t o = dr.lo; o < dr.hi; ++o)
            im2col_slice(g, volume + (o * g.stride_d + kz * g.dil_d - g.pad_f) * plane, ki, kj, col + o * slice);
          std::fill(col + dr.hi * slice, col + spatial, 0.0f);
        }
    }
  }
}

void col2im_add(const ConvGeometry& g, const float* col, float* x) {
  const int64_t slice = g.oh * g.ow, spatial = g.spatial(), plane = g.h * g.w;
  for (int64_t c = 0; c < g.cg; ++c) {
    float* volume = x + c * g.volume();
    for (int64_t kz = 0; kz < g.kd; ++kz) {
      const Range dr = g.depths[size_t(kz)];
      for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj, col += spatial)
          for (int64_t o = dr.lo; o < dr.hi; ++o)
            col2im_slice(g, col + o * slice, ki, kj, volume + (o * g.stride_d + kz * g.dil_d - g.pad_f) * plane);
    }
  }
}

const float* columns(const ConvGeometry& g, const float* x, int64_t b, int64_t grp, float* workspace) {
  const float* block = x + (b * g.c + grp * g.cg) * g.volume();
  if (g.direct) return block;
  im2col(g, block, workspace);
  return workspace;
}

}  // namespace of::kernels::cpu
