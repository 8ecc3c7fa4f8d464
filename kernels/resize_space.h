// SPDX-License-Identifier: Apache-2.0
// resize's index math (nn.Upsample, F.interpolate: ONNX Resize, nearest, linear and cubic), one
// definition for the CPU kernels and their CUDA twins (OF_HOST_DEVICE). X is `planes` planes of
// in_h x in_w, Y of out_h x out_w (a 1-D resize is height 1). Along each axis an output index o
// reads input coordinate x = f(o) (the coordinate transformation), then the nearest index, the
// two around x or the four around x (cubic) with weights, as torch computes them: a linear
// coordinate below 0 counts as 0, the second tap stops at the last index; cubic's four taps
// (floor(x) - 1 .. floor(x) + 2) are clamped into the input, with Keys' weights for A (torch's
// upsample_bicubic2d: A = -0.75).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

enum class ResizeMode : int32_t { nearest = 0, linear = 1, cubic = 2 };
enum class ResizeCoord : int32_t { asymmetric = 0, half_pixel = 1, pytorch_half_pixel = 2, align_corners = 3 };
enum class ResizeRound : int32_t { floor = 0, ceil = 1, round_prefer_floor = 2, round_prefer_ceil = 3 };

struct ResizeSpace {
  int64_t planes = 0, in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  float scale_h = 1.0f, scale_w = 1.0f;  // ONNX's: output size over input size
  ResizeMode mode = ResizeMode::nearest;
  ResizeCoord coord = ResizeCoord::asymmetric;
  ResizeRound round = ResizeRound::floor;
  float cubic_a = -0.75f;  // cubic's coefficient (ONNX cubic_coeff_a)
};

// The taps of output index o along an axis of `in` inputs and `out` outputs: i0 with weight w0
// and i1 with w1 (nearest: i1 = i0, w0 = 1, w1 = 0).
struct ResizeTaps {
  int64_t i0 = 0, i1 = 0;
  float w0 = 1.0f, w1 = 0.0f;
};

// The input coordinate output index o reads along an axis.
OF_HOST_DEVICE inline float resize_coord(const ResizeSpace& s, int64_t o, int64_t in, int64_t out, float scale) {
  switch (s.coord) {
    case ResizeCoord::asymmetric: return float(o) / scale;
    case ResizeCoord::half_pixel: return (float(o) + 0.5f) / scale - 0.5f;
    case ResizeCoord::pytorch_half_pixel: return out > 1 ? (float(o) + 0.5f) / scale - 0.5f : 0.0f;
    default: return out > 1 ? float(in - 1) / float(out - 1) * float(o) : 0.0f;  // align_corners, torch's order
  }
}

OF_HOST_DEVICE inline ResizeTaps resize_taps(const ResizeSpace& s, int64_t o, int64_t in, int64_t out, float scale) {
  float x = resize_coord(s, o, in, out, scale);
  ResizeTaps t;
  if (s.mode == ResizeMode::nearest) {
    int64_t fl = int64_t(x);  // floor: truncation, then one down for a negative fraction
    if (float(fl) > x) --fl;
    const float frac = x - float(fl);
    int64_t r = fl;
    switch (s.round) {
      case ResizeRound::floor: break;
      case ResizeRound::ceil: r = frac > 0.0f ? fl + 1 : fl; break;
      case ResizeRound::round_prefer_floor: r = frac > 0.5f ? fl + 1 : fl; break;
      case ResizeRound::round_prefer_ceil: r = frac >= 0.5f ? fl + 1 : fl; break;
    }
    const int64_t i = r < 0 ? 0 : r >= in ? in - 1 : r;
    t.i0 = t.i1 = i;
    return t;
  }
  if (x < 0.0f) x = 0.0f;
  int64_t i = int64_t(x);  // x >= 0: truncation is floor
  if (i > in - 1) i = in - 1;
  t.i0 = i;
  t.i1 = i < in - 1 ? i + 1 : i;
  t.w1 = x - float(i);
  t.w0 = 1.0f - t.w1;
  return t;
}

// Cubic's four taps of output index o: floor(x) - 1 + k clamped into [0, in), weighted by Keys'
// kernel at the distances 1 + t, t, 1 - t, 2 - t (t = x - floor(x)), as torch's
// get_cubic_upsample_coefficients. The coordinate is not clamped at 0 first (torch's cubic=true).
struct ResizeTaps4 {
  int64_t i[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

OF_HOST_DEVICE inline ResizeTaps4 resize_taps_cubic(const ResizeSpace& s, int64_t o, int64_t in, int64_t out, float scale) {
  const float x = resize_coord(s, o, in, out, scale);
  int64_t fl = int64_t(x);
  if (float(fl) > x) --fl;  // floor of a negative coordinate
  const float t = x - float(fl), a = s.cubic_a;
  // Keys: |d| <= 1: ((a + 2)|d| - (a + 3)) d^2 + 1; 1 < |d| < 2: ((a|d| - 5a)|d| + 8a)|d| - 4a.
  auto near = [a](float d) { return ((a + 2.0f) * d - (a + 3.0f)) * d * d + 1.0f; };
  auto far = [a](float d) { return ((a * d - 5.0f * a) * d + 8.0f * a) * d - 4.0f * a; };
  ResizeTaps4 r;
  r.w[0] = far(t + 1.0f);
  r.w[1] = near(t);
  r.w[2] = near(1.0f - t);
  r.w[3] = far(2.0f - t);
  for (int k = 0; k < 4; ++k) {
    const int64_t i = fl - 1 + k;
    r.i[k] = i < 0 ? 0 : i >= in ? in - 1 : i;
  }
  return r;
}

// One output element of plane `p` at (oh, ow).
OF_HOST_DEVICE inline float resize_at(const ResizeSpace& s, const float* x, int64_t p, int64_t oh, int64_t ow) {
  const float* plane = x + p * s.in_h * s.in_w;
  if (s.mode == ResizeMode::cubic) {
    const ResizeTaps4 h = resize_taps_cubic(s, oh, s.in_h, s.out_h, s.scale_h), w = resize_taps_cubic(s, ow, s.in_w, s.out_w, s.scale_w);
    float sum = 0.0f;
    for (int a = 0; a < 4; ++a) {
      const float* row = plane + h.i[a] * s.in_w;
      sum += h.w[a] * (w.w[0] * row[w.i[0]] + w.w[1] * row[w.i[1]] + w.w[2] * row[w.i[2]] + w.w[3] * row[w.i[3]]);
    }
    return sum;
  }
  const ResizeTaps h = resize_taps(s, oh, s.in_h, s.out_h, s.scale_h), w = resize_taps(s, ow, s.in_w, s.out_w, s.scale_w);
  if (s.mode == ResizeMode::nearest) return plane[h.i0 * s.in_w + w.i0];  // a copy: no 0 * inf
  const float* r0 = plane + h.i0 * s.in_w;
  const float* r1 = plane + h.i1 * s.in_w;
  return h.w0 * (w.w0 * r0[w.i0] + w.w1 * r0[w.i1]) + h.w1 * (w.w0 * r1[w.i0] + w.w1 * r1[w.i1]);
}

// The gradient of plane p: dX's plane (zeroed here) gets each dY element's share at the taps
// that read it, output elements in row-major order (the CPU's and the GPU's order alike).
OF_HOST_DEVICE inline void resize_grad_plane(const ResizeSpace& s, const float* dy, float* dx, int64_t p) {
  float* plane = dx + p * s.in_h * s.in_w;
  const float* g = dy + p * s.out_h * s.out_w;
  for (int64_t i = 0; i < s.in_h * s.in_w; ++i) plane[i] = 0.0f;
  if (s.mode == ResizeMode::cubic) {
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const ResizeTaps4 h = resize_taps_cubic(s, oh, s.in_h, s.out_h, s.scale_h);
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const ResizeTaps4 w = resize_taps_cubic(s, ow, s.in_w, s.out_w, s.scale_w);
        const float v = g[oh * s.out_w + ow];
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) plane[h.i[a] * s.in_w + w.i[b]] += h.w[a] * w.w[b] * v;
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < s.out_h; ++oh) {
    const ResizeTaps h = resize_taps(s, oh, s.in_h, s.out_h, s.scale_h);
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      const ResizeTaps w = resize_taps(s, ow, s.in_w, s.out_w, s.scale_w);
      const float v = g[oh * s.out_w + ow];
      if (s.mode == ResizeMode::nearest) {
        plane[h.i0 * s.in_w + w.i0] += v;
        continue;
      }
      plane[h.i0 * s.in_w + w.i0] += h.w0 * w.w0 * v;
      plane[h.i0 * s.in_w + w.i1] += h.w0 * w.w1 * v;
      plane[h.i1 * s.in_w + w.i0] += h.w1 * w.w0 * v;
      plane[h.i1 * s.in_w + w.i1] += h.w1 * w.w1 * v;
    }
  }
}

}  // namespace of::kernels
