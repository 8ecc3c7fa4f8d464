// SPDX-License-Identifier: Apache-2.0
// What a kernel's configuration must satisfy and what follows from it (sizes, strides, scalars),
// said once for the kernels that have twins on several devices (cpu/, cuda/): each factory calls
// the rule, then prepares its own loops or launches. Failures name the node, as cpu/check.h's do.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace of::kernels {

// gemm: Y[m,n] = alpha * op(A) * op(B) + beta * C, C unidirectionally broadcast to [m,n].
struct GemmGeometry {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1;  // row-major leading dimensions of A and B
  float alpha = 1, beta = 1;
  bool has_c = false;                              // a C input with beta != 0
  int64_t c_row_stride = 0, c_col_stride = 0;      // C's element strides (0 along broadcast axes)
  bool relu = false;                               // fused activation
};
GemmGeometry gemm_geometry(const KernelConfig& cfg);

// reduce_sum: sorted `axes` (absent: all), `keepdims`, `divisor`; the input as runs of adjacent
// kept or reduced dims (size-1 dims dropped), outermost first.
struct ReduceGeometry {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  int64_t in_n = 0, out_n = 0;
  float divisor = 1.0f;
};
ReduceGeometry reduce_geometry(const KernelConfig& cfg);

// Optimizer updates: inputs (param, grad, states..., lr, step), outputs (param', states'...), all
// f32, the tensors of param's shape and lr, step scalars. Returns the element count.
int64_t update_layout(const KernelConfig& cfg, const char* name, const std::vector<const char*>& states);
// A float attribute that must be >= lo.
float float_attr_at_least(const KernelConfig& cfg, const char* name, const char* attr, float fallback, float lo);

// softmax_cross_entropy (and its grad, metrics): input `at` is [N,C] and input at + 1 the labels [N].
std::pair<int64_t, int64_t> xent_dims(const KernelConfig& cfg, const char* name, int at);
// The divisor of a loss's mean over n rows or elements: n / `scale` (a device holding 1/k of a
// split batch divides by N*k, so the k devices' losses sum to the whole batch's).
double loss_denominator(const KernelConfig& cfg, int64_t n);

// accumulate: (grad, lr, step) -> (mean grad, lr, step); returns micro_batches (k).
int64_t accumulate_micro_batches(const KernelConfig& cfg);

// copy: one input, one output of the same dtype and size; returns the bytes.
size_t copy_bytes(const KernelConfig& cfg);

}  // namespace of::kernels
