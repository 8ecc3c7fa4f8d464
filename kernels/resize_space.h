// SPDX-License-Identifier: Apache-2.0
// resize's index math (nn.Upsample, F.interpolate: ONNX Resize, nearest and linear), one
// definition for the CPU kernels and their CUDA twins (OF_HOST_DEVICE). X is `planes` planes of
// in_h x in_w, Y of out_h x out_w (a 1-D resize is height 1). Along each axis an output index o
// reads input coordinate x = f(o) (the coordinate transformation), then the nearest index or the
// two around x with weights, as torch computes them: a linear coordinate below 0 counts as 0, the
// second tap stops at the last index.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

enum class ResizeMode : int32_t { nearest = 0, linear = 1 };
enum class ResizeCoord : int32_t { asymmetric = 0, half_pixel = 1, pytorch_half_pixel = 2, align_corners = 3 };
enum class ResizeRound : int32_t { floor = 0, ceil = 1, round_prefer_floor = 2, round_prefer_ceil = 3 };

struct ResizeSpace {
  int64_t planes = 0, in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  float scale_h = 1.0f, scale_w = 1.0f;  // ONNX's: output size over input size
  ResizeMode mode = ResizeMode::nearest;
  ResizeCoord coord = ResizeCoord::asymmetric;
  ResizeRound round = ResizeRound::floor;
};

// The taps of output index o along an axis of `in` inputs and `out` outputs: i0 with weight w0
// and i1 with w1 (nearest: i1 = i0, w0 = 1, w1 = 0).
struct ResizeTaps {
  int64_t i0 = 0, i1 = 0;
  float w0 = 1.0f, w1 = 0.0f;
};

OF_HOST_DEVICE inline ResizeTaps resize_taps(const ResizeSpace& s, int64_t o, int64_t in, int64_t out, float scale) {
  float x;
  switch (s.coord) {
    case ResizeCoord::asymmetric: x = float(o) / scale; break;
    case ResizeCoord::half_pixel: x = (float(o) + 0.5f) / scale - 0.5f; break;
    case ResizeCoord::pytorch_half_pixel: x = out > 1 ? (float(o) + 0.5f) / scale - 0.5f : 0.0f; break;
    default: x = out > 1 ? float(in - 1) / float(out - 1) * float(o) : 0.0f; break;  // align_corners, torch's order
  }
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

// One output element of plane `p` at (oh, ow).
OF_HOST_DEVICE inline float resize_at(const ResizeSpace& s, const float* x, int64_t p, int64_t oh, int64_t ow) {
  const ResizeTaps h = resize_taps(s, oh, s.in_h, s.out_h, s.scale_h), w = resize_taps(s, ow, s.in_w, s.out_w, s.scale_w);
  const float* plane = x + p * s.in_h * s.in_w;
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
