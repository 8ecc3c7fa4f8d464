// SPDX-License-Identifier: Apache-2.0
// pad's index math, one definition for the CPU kernels and their CUDA twins (OF_HOST_DEVICE):
// which input element an output element reads, and which output elements an input element's
// gradient sums, in one fixed order so that both devices add them up alike.
//
// Along each axis the output is `before` new positions, the input's `dim`, then `after` new ones:
// constant mode fills the new ones with `value`; reflect mirrors the input about its first and
// last element (torch's ReflectionPad: [a b c] padded by 2 is c b a b c b a); edge repeats them
// (ReplicationPad: a a a b c c c).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

enum class PadMode : int32_t { constant = 0, reflect = 1, edge = 2 };

struct PadSpace {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  PadMode mode = PadMode::constant;
  float value = 0.0f;
  int64_t in_dims[kMaxRank] = {}, out_dims[kMaxRank] = {}, before[kMaxRank] = {};
};

// The input index output index `o` of axis `d` reads, or -1 where constant mode fills.
OF_HOST_DEVICE inline int64_t pad_source(const PadSpace& s, int d, int64_t o) {
  const int64_t n = s.in_dims[d];
  int64_t i = o - s.before[d];
  if (i >= 0 && i < n) return i;
  switch (s.mode) {
    case PadMode::constant: return -1;
    case PadMode::edge: return i < 0 ? 0 : n - 1;
    case PadMode::reflect: return i < 0 ? -i : 2 * (n - 1) - i;  // pads < dim (checked), so in range
  }
  return -1;
}

// The output indices of axis `d` that read input index `i`, ascending, as at most three runs
// [first[k], first[k] + count[k]); returns how many runs. Every input index has its own position,
// the middle run; edge adds the pads beside the first and last element, reflect their mirrors.
OF_HOST_DEVICE inline int pad_targets(const PadSpace& s, int d, int64_t i, int64_t first[3], int64_t count[3]) {
  const int64_t n = s.in_dims[d], b = s.before[d], out = s.out_dims[d];
  int runs = 0;
  auto add = [&](int64_t f, int64_t c) {
    if (c > 0) {
      first[runs] = f;
      count[runs] = c;
      ++runs;
    }
  };
  if (s.mode == PadMode::edge && i == 0) add(0, b);
  if (s.mode == PadMode::reflect && i >= 1 && i <= b) add(b - i, 1);
  add(b + i, 1);
  if (s.mode == PadMode::edge && i == n - 1) add(b + n, out - b - n);
  if (s.mode == PadMode::reflect && i < n - 1 && b + 2 * (n - 1) - i < out) add(b + 2 * (n - 1) - i, 1);
  return runs;
}

// dX at the input position idx[0..rank) (a multi-index): the sum of dY over the positions that
// read it, in the order pad_targets gives them along each axis, the last axis fastest. One term
// (constant mode, or away from the pads) is that element itself, bit for bit.
OF_HOST_DEVICE inline float pad_grad_at(const PadSpace& s, const float* dy, const int64_t* idx) {
  int64_t first[PadSpace::kMaxRank][3], count[PadSpace::kMaxRank][3], t[PadSpace::kMaxRank];
  int runs[PadSpace::kMaxRank], k[PadSpace::kMaxRank];
  for (int d = 0; d < s.rank; ++d) {
    runs[d] = pad_targets(s, d, idx[d], first[d], count[d]);  // >= 1: the element's own position
    k[d] = 0;
    t[d] = 0;
  }
  float acc = 0.0f;
  bool started = false;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < s.rank; ++d) off = off * s.out_dims[d] + first[d][k[d]] + t[d];
    acc = started ? acc + dy[off] : dy[off];
    started = true;
    int d = s.rank - 1;
    for (; d >= 0; --d) {  // the next position: within the run, then the next run, then carry
      if (++t[d] < count[d][k[d]]) break;
      t[d] = 0;
      if (++k[d] < runs[d]) break;
      k[d] = 0;
    }
    if (d < 0) return acc;
  }
}

}  // namespace of::kernels
