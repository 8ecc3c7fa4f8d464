// SPDX-License-Identifier: Apache-2.0
// reduce_max's index math (x.max(dim).values, torch.amax: ONNX ReduceMax), one definition for the
// CPU kernels and their CUDA twins (OF_HOST_DEVICE). Output element o reads the inputs at its
// kept axes' index and every index of the reduced axes, in increasing memory order; the maximum
// is a NaN if one is read (torch's max propagates it), and its gradient goes to the first input
// equal to it (torch.max(dim) backward: the index it returned).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

struct ReduceMaxSpace {
  static constexpr int kMaxRank = 8;
  int kept = 0, reduced = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};  // X's strides along the kept axes
  int64_t red_dims[kMaxRank] = {}, red_strides[kMaxRank] = {};    // ... and the reduced ones
  int64_t out_n = 0, per_out = 1;                                 // outputs, and inputs per output
};

// The offset of flat index i of dims[0..n) (last fastest) in a tensor of the given strides.
OF_HOST_DEVICE inline int64_t strided_offset(int64_t i, const int64_t* dims, const int64_t* strides, int n) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

// X's offset of output o's first input, and of its t-th reduced position from there.
OF_HOST_DEVICE inline int64_t reduce_base(const ReduceMaxSpace& s, int64_t o) {
  return strided_offset(o, s.kept_dims, s.kept_strides, s.kept);
}
OF_HOST_DEVICE inline int64_t reduce_step(const ReduceMaxSpace& s, int64_t t) {
  return strided_offset(t, s.red_dims, s.red_strides, s.reduced);
}

OF_HOST_DEVICE inline float reduce_max_at(const ReduceMaxSpace& s, const float* x, int64_t o) {
  const int64_t base = reduce_base(s, o);
  float m = x[base];
  for (int64_t t = 1; t < s.per_out && m == m; ++t) {  // stops at a NaN: the result
    const float v = x[base + reduce_step(s, t)];
    if (v > m || v != v) m = v;
  }
  return m;
}

// X's offset of the first input of output o equal to y (a NaN y: the first NaN).
OF_HOST_DEVICE inline int64_t reduce_argmax_at(const ReduceMaxSpace& s, const float* x, int64_t o, float y) {
  const int64_t base = reduce_base(s, o);
  for (int64_t t = 0; t < s.per_out; ++t) {
    const int64_t off = base + reduce_step(s, t);
    const float v = x[off];
    if (v == y || (v != v && y != y)) return off;
  }
  return base;  // y was not read from x (not this kernel's output): the first position
}

// argmax (ONNX ArgMax, torch.argmax): the position along the reduced axis of output o's maximum,
// the first equal to it (`last`: the last, ONNX's select_last_index); a NaN is the maximum, the
// first one read.
OF_HOST_DEVICE inline int64_t reduce_argmax_position(const ReduceMaxSpace& s, const float* x, int64_t o, bool last) {
  const float* base = x + reduce_base(s, o);
  float m = base[reduce_step(s, 0)];
  if (m != m) return 0;
  int64_t best = 0;
  for (int64_t t = 1; t < s.per_out; ++t) {
    const float v = base[reduce_step(s, t)];
    if (v != v) return t;
    if (v > m || (last && v == m)) {
      m = v;
      best = t;
    }
  }
  return best;
}

}  // namespace of::kernels
