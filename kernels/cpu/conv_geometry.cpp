// SPDX-License-Identifier: Apache-2.0
// 2-D convolution geometry, im2col and col2im (see conv_geometry.h).
#include "kernels/cpu/conv_geometry.h"

#include <algorithm>
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
  g.one_d = x_given.size() == 3 && wt_given.size() == 3;
  const Shape x = g.one_d ? as_2d_window(x_given) : x_given, wt = g.one_d ? as_2d_window(wt_given) : wt_given;
  if (x.size() != 4 || wt.size() != 4)
    fail(where_of(cfg), "{}: only 1-D and 2-D convolution is supported: X {}, W {}", kernel,
         shape_str(x_given), shape_str(wt_given));
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.m = wt[0], g.kh = wt[2], g.kw = wt[3];
  if (g.c < 1 || g.kh < 1 || g.kw < 1)
    fail(where_of(cfg), "{}: empty channels or kernel: X {}, W {}", kernel, shape_str(x),
         shape_str(wt));
  g.group = cfg.attrs.get_int("group", 1);
  if (g.group < 1 || g.c % g.group != 0 || g.m % g.group != 0 || wt[1] != g.c / g.group)
    fail(where_of(cfg), "{}: X {} and W {} do not fit group={}", kernel, shape_str(x),
         shape_str(wt), g.group);
  g.cg = g.c / g.group;
  g.mg = g.m / g.group;
  const auto ks = get_ints_n(cfg, kernel, "kernel_shape", 2, {g.kh, g.kw});
  if (ks[0] != g.kh || ks[1] != g.kw)
    fail(where_of(cfg), "{}: kernel_shape [{},{}] differs from W {}", kernel, ks[0], ks[1],
         shape_str(wt));
  const auto st = get_ints_n(cfg, kernel, "strides", 2, {1, 1});
  const auto pads = get_ints_n(cfg, kernel, "pads", 4, {0, 0, 0, 0});
  const auto dil = get_ints_n(cfg, kernel, "dilations", 2, {1, 1});
  // Bounded so that no sum or product below can overflow (dims are bounded by the memory they fill).
  constexpr int64_t kMaxAttr = int64_t(1) << 31;
  auto outside = [&](int64_t v, int64_t lo) { return v < lo || v > kMaxAttr; };
  if (outside(st[0], 1) || outside(st[1], 1) || outside(dil[0], 1) || outside(dil[1], 1) ||
      std::any_of(pads.begin(), pads.end(), [&](int64_t p) { return outside(p, 0); }) || g.kh > kMaxAttr || g.kw > kMaxAttr ||
      g.h > kMaxAttr || g.w > kMaxAttr)
    fail(where_of(cfg), "{}: strides and dilations must be from 1 to 2^31, pads from 0 to 2^31", kernel);
  g.stride_h = st[0], g.stride_w = st[1], g.dil_h = dil[0], g.dil_w = dil[1];
  g.pad_t = pads[0], g.pad_l = pads[1];
  g.oh = (g.h + pads[0] + pads[2] - g.dil_h * (g.kh - 1) - 1) / g.stride_h + 1;
  g.ow = (g.w + pads[1] + pads[3] - g.dil_w * (g.kw - 1) - 1) / g.stride_w + 1;
  if (g.oh < 1 || g.ow < 1)
    fail(where_of(cfg), "{}: kernel {} is larger than padded input {}", kernel, shape_str(wt),
         shape_str(x));
  g.direct = g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 &&
             std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  for (int64_t k = 0; k < g.kh; ++k)
    g.rows.push_back(valid_outputs(g.h, g.stride_h, k * g.dil_h - g.pad_t, g.oh));
  for (int64_t k = 0; k < g.kw; ++k)
    g.cols.push_back(valid_outputs(g.w, g.stride_w, k * g.dil_w - g.pad_l, g.ow));
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
  const int64_t plane = g.h * g.w;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t c = 0; c < g.c; ++c) {
      float* p = x + (b * g.c + c) * plane;
      const float v = bias[c];
      for (int64_t i = 0; i < plane; ++i) p[i] += v;
    }
}

void im2col(const ConvGeometry& g, const float* x, float* col) {
  const int64_t oh = g.oh, ow = g.ow;
  for (int64_t c = 0; c < g.cg; ++c) {
    const float* plane = x + c * g.h * g.w;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const Range rr = g.rows[ki];
      for (int64_t kj = 0; kj < g.kw; ++kj, col += oh * ow) {
        const Range cr = g.cols[kj];
        const int64_t off_w = kj * g.dil_w - g.pad_l;
        std::fill(col, col + rr.lo * ow, 0.0f);
        for (int64_t o = rr.lo; o < rr.hi; ++o) {
          const float* src = plane + (o * g.stride_h + ki * g.dil_h - g.pad_t) * g.w + off_w;
          float* dst = col + o * ow;
          std::fill(dst, dst + cr.lo, 0.0f);
          if (g.stride_w == 1) {
            std::memcpy(dst + cr.lo, src + cr.lo, (cr.hi - cr.lo) * sizeof(float));
          } else {
            for (int64_t p = cr.lo; p < cr.hi; ++p) dst[p] = src[p * g.stride_w];
          }
          std::fill(dst + cr.hi, dst + ow, 0.0f);
        }
        std::fill(col + rr.hi * ow, col + oh * ow, 0.0f);
      }
    }
  }
}

void col2im_add(const ConvGeometry& g, const float* col, float* x) {
  const int64_t oh = g.oh, ow = g.ow;
  for (int64_t c = 0; c < g.cg; ++c) {
    float* plane = x + c * g.h * g.w;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const Range rr = g.rows[ki];
      for (int64_t kj = 0; kj < g.kw; ++kj, col += oh * ow) {
        const Range cr = g.cols[kj];
        const int64_t off_w = kj * g.dil_w - g.pad_l;
        for (int64_t o = rr.lo; o < rr.hi; ++o) {
          float* dst = plane + (o * g.stride_h + ki * g.dil_h - g.pad_t) * g.w + off_w;
          const float* src = col + o * ow;
          for (int64_t p = cr.lo; p < cr.hi; ++p) dst[p * g.stride_w] += src[p];
        }
      }
    }
  }
}

const float* columns(const ConvGeometry& g, const float* x, int64_t b, int64_t grp, float* workspace) {
  const float* block = x + (b * g.c + grp * g.cg) * g.h * g.w;
  if (g.direct) return block;
  im2col(g, block, workspace);
  return workspace;
}

}  // namespace of::kernels::cpu
