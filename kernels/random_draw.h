// SPDX-License-Identifier: Apache-2.0
// random's draw (torch.rand_like, torch.randn_like: ONNX RandomUniform(Like), RandomNormal(Like)):
// element i of a piece is one Philox4x32-10 block keyed by the run's seed and the node's stream,
// counted by (i, the piece's index in the whole run), as dropout's masks are: the same numbers on
// any layout and after a resume, and on the CPU and its CUDA twins (kernels/philox.h). PyTorch's
// generators draw other numbers.
#pragma once

#include <cstdint>

#include "kernels/philox.h"
#include "kernels/pointwise_ops.h"

namespace of::kernels {

struct RandomGeometry {
  int64_t n = 0;
  bool normal = false;  // else uniform
  float a = 0.0f, b = 1.0f;  // uniform: low, high; normal: mean, scale
  uint32_t stream = 0;
};

// Element i: uniform low + (high - low) u with u in [0, 1) from 24 bits; normal mean + scale z
// with z by Box-Muller from two 24-bit uniforms, the first in (0, 1] (its log is finite).
OF_HOST_DEVICE inline float random_at(const RandomGeometry& g, uint64_t i, uint64_t piece, uint32_t k0, uint32_t k1) {
  const Philox4x32 r = philox(Philox4x32{{uint32_t(i), uint32_t(i >> 32), uint32_t(piece), uint32_t(piece >> 32)}}, k0, k1);
  constexpr float kUnit = 1.0f / 16777216.0f;  // 2^-24
  if (!g.normal) return g.a + (g.b - g.a) * (float(r.c[0] >> 8) * kUnit);
  const float u1 = float((r.c[0] >> 8) + 1) * kUnit, u2 = float(r.c[1] >> 8) * kUnit;
  constexpr float kTwoPi = 6.28318530717958647692f;
  return g.a + g.b * (pointwise::math::sqrt(-2.0f * pointwise::math::log(u1)) * pointwise::math::cos(kTwoPi * u2));
}

}  // namespace of::kernels
