// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/row_reduce.h"

#include <algorithm>
#include <limits>

#include "kernels/cpu/vector_clones.h"

namespace of::kernels::cpu {

OF_VECTOR_CLONES float row_sum(const float* __restrict x, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane[k] += x[j + k];
  float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; j < n; ++j) s += x[j];
  return s;
}

// std::max(m, v) keeps m when v is NaN (v < m and m < v are both false), in every lane as in the
// left-to-right scan, so the lanes' maximum is the scan's. (Of +0 and -0 it keeps whichever came
// first; callers subtract the maximum, where the two are the same.)
OF_VECTOR_CLONES float row_max(const float* __restrict x, int64_t n) {
  constexpr float lo = -std::numeric_limits<float>::infinity();
  float lane[8] = {lo, lo, lo, lo, lo, lo, lo, lo};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) lane[k] = std::max(lane[k], x[j + k]);
  float m = std::max(std::max(std::max(lane[0], lane[1]), std::max(lane[2], lane[3])),
                     std::max(std::max(lane[4], lane[5]), std::max(lane[6], lane[7])));
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

}  // namespace of::kernels::cpu
