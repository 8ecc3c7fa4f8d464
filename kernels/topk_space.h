// SPDX-License-Identifier: Apache-2.0
// topk's selection (torch.topk, torch.sort: ONNX TopK), one definition for the CPU kernels and
// their CUDA twins (OF_HOST_DEVICE). X is [outer, n, inner] around its axis; each of the outer x
// inner rows gives its k largest (or smallest) values in order, with their positions along the
// axis. A NaN counts as the largest value, as torch's topk takes it; equal values come in
// position order. Selection pass j takes the best element ordered after pass j-1's: O(n k) per
// row and no memory of its own, which suits a GPU thread (k is small where topk is used: a
// router's top-2, a few best classes).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

struct TopKSpace {
  int64_t outer = 1, n = 1, inner = 1, k = 1;
  bool largest = true;
};

// Whether (a, i) comes before (b, j) in the order topk returns: larger first (smaller with
// largest = false), a NaN counting as larger than any number, then the lower position.
OF_HOST_DEVICE inline bool topk_before(float a, int64_t i, float b, int64_t j, bool largest) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan != b_nan) return largest ? a_nan : b_nan;
  if (!a_nan && a != b) return largest ? a > b : a < b;
  return i < j;
}

// Row r (outer index r / inner, inner index r % inner): values[r's k] and positions along the axis.
OF_HOST_DEVICE inline void topk_row(const TopKSpace& s, const float* x, int64_t r, float* values, int64_t* indices) {
  const int64_t o = r / s.inner, in = r % s.inner;
  const float* row = x + o * s.n * s.inner + in;
  float prev = 0.0f;
  int64_t prev_i = -1;
  for (int64_t j = 0; j < s.k; ++j) {
    int64_t best = -1;
    float best_v = 0.0f;
    for (int64_t t = 0; t < s.n; ++t) {
      const float v = row[t * s.inner];
      if (prev_i >= 0 && !topk_before(prev, prev_i, v, t, s.largest)) continue;  // taken by an earlier pass
      if (best < 0 || topk_before(v, t, best_v, best, s.largest)) {
        best = t;
        best_v = v;
      }
    }
    const int64_t out = o * s.k * s.inner + j * s.inner + in;
    values[out] = best_v;
    indices[out] = best;
    prev = best_v;
    prev_i = best;
  }
}

// topk_grad: dX of row r: dY's k values at their positions (distinct within a row), zero elsewhere.
OF_HOST_DEVICE inline void topk_grad_row(const TopKSpace& s, const float* dy, const int64_t* indices, int64_t r, float* dx) {
  const int64_t o = r / s.inner, in = r % s.inner;
  float* row = dx + o * s.n * s.inner + in;
  for (int64_t t = 0; t < s.n; ++t) row[t * s.inner] = 0.0f;
  for (int64_t j = 0; j < s.k; ++j) {
    const int64_t at = o * s.k * s.inner + j * s.inner + in;
    const int64_t t = indices[at];
    if (t >= 0 && t < s.n) row[t * s.inner] = dy[at];  // a position from elsewhere is skipped, never written out of the row
  }
}

}  // namespace of::kernels
