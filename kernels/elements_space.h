// SPDX-License-Identifier: Apache-2.0
// The index space of gather_elements and scatter_elements (ONNX GatherElements and
// ScatterElements, torch.gather and Tensor.scatter_ / scatter_add_ along one axis), one
// definition for the CPU kernels (cpu/elements.cpp) and their CUDA twins (cuda/elements.cu):
// indices I of data D's rank, I's extent at most D's off the axis; element e of I (row-major)
// addresses D at its own coordinates but, along the axis, at its index (negative ones counted
// from the end). An index outside the axis addresses nothing: gather reads 0, scatter skips it
// (torch would stop with an error; a kernel never reads or writes out of bounds).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

inline constexpr int kMaxElementsRank = 8;

struct ElementsSpace {
  int rank = 0;
  int axis = 0;
  int64_t axis_len = 0;                         // D's extent along the axis
  int64_t count = 0;                            // elements of I
  int64_t data_count = 0;                       // elements of D
  bool wide = true;                             // int64 indices (else int32)
  int64_t idx_dims[kMaxElementsRank] = {};      // I's shape
  int64_t idx_strides[kMaxElementsRank] = {};   // I's row-major strides
  int64_t data_strides[kMaxElementsRank] = {};  // D's row-major strides

  // Lines: the runs of I along the axis (every coordinate but the axis's fixed).
  OF_HOST_DEVICE int64_t lines() const { return idx_dims[axis] == 0 ? 0 : count / idx_dims[axis]; }

  OF_HOST_DEVICE int64_t index_at(const void* indices, int64_t e) const {
    const int64_t v = wide ? static_cast<const int64_t*>(indices)[e] : static_cast<const int32_t*>(indices)[e];
    return v < 0 ? v + axis_len : v;
  }

  // The offset into D that element e of I addresses, or -1 when its index is out of range.
  OF_HOST_DEVICE int64_t data_offset(const void* indices, int64_t e) const {
    const int64_t v = index_at(indices, e);
    if (v < 0 || v >= axis_len) return -1;
    int64_t rest = e, off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % idx_dims[d];
      rest /= idx_dims[d];
      off += (d == axis ? v : c) * data_strides[d];
    }
    return off;
  }

  // Element j of line l (j along the axis).
  OF_HOST_DEVICE int64_t element(int64_t l, int64_t j) const {
    int64_t rest = l, e = j * idx_strides[axis];
    for (int d = rank - 1; d >= 0; --d) {
      if (d == axis) continue;
      const int64_t c = rest % idx_dims[d];
      rest /= idx_dims[d];
      e += c * idx_strides[d];
    }
    return e;
  }
};

// scatter_elements' modes: y = data with each addressed element set to its update (last one in
// I's order wins), or the updates added (in I's order); or zeros plus the updates (gather_elements'
// gradient, inputs indices and updates); or data with each addressed element cleared to 0
// (scatter's gradient to data, inputs data and indices).
enum class ScatterMode : int { set = 0, add = 1, add_to_zeros = 2, clear = 3 };

// One element's write: update e into y[off] as the mode says (clear: 0; updates unread).
OF_HOST_DEVICE inline void scatter_one(ScatterMode mode, float* y, int64_t off, const float* updates, int64_t e) {
  if (mode == ScatterMode::set) y[off] = updates[e];
  else if (mode == ScatterMode::clear) y[off] = 0.0f;
  else y[off] += updates[e];
}

// scatter_elements' inputs by mode: the base (null: zeros), the indices, the updates (null: clear).
struct ScatterInputs {
  const void* base = nullptr;
  const void* indices = nullptr;
  const float* updates = nullptr;
};
inline ScatterInputs scatter_inputs(ScatterMode mode, const void* const* in) {
  switch (mode) {
    case ScatterMode::add_to_zeros: return {nullptr, in[0], static_cast<const float*>(in[1])};
    case ScatterMode::clear: return {in[0], in[1], nullptr};
    default: return {in[0], in[1], static_cast<const float*>(in[2])};
  }
}

}  // namespace of::kernels
