// SPDX-License-Identifier: Apache-2.0
// Config checks shared by the CPU kernel factories, so that every factory reports a bad input
// count, dtype or shape with the same wording: "node 'n': conv: input 1 has shape [..], ...".
#pragma once

#include <string_view>
#include <vector>

#include "common/error.h"
#include "kernels/kernel.h"

namespace of::kernels::cpu {

// Where a factory failure happened: the node. (Not `Where{.node = ..}`, which -Wextra flags.)
inline Where where_of(const KernelConfig& cfg) {
  Where w;
  w.node = cfg.node;
  return w;
}

// Throws unless cfg has [min_in, max_in] inputs and exactly n_out outputs.
void check_arity(const KernelConfig& cfg, std::string_view kernel, int min_in, int max_in,
                 int n_out);
// Throws unless every input and output has dtype t.
void check_dtypes(const KernelConfig& cfg, std::string_view kernel, DType t);
// Per-tensor variant for kernels with mixed dtypes (labels i64 beside f32 logits); the lists
// must have the arity that check_arity has already enforced.
void check_dtypes(const KernelConfig& cfg, std::string_view kernel, const std::vector<DType>& in,
                  const std::vector<DType>& out);
// Throws unless inputs[i] has shape s (`what` names it: "dy", "labels").
void check_input_shape(const KernelConfig& cfg, std::string_view kernel, int i,
                       std::string_view what, const Shape& s);
// Throws unless outputs[i] has shape s.
void check_output_shape(const KernelConfig& cfg, std::string_view kernel, int i, const Shape& s);
// Reads an ints attribute of exactly n values (fallback when absent).
std::vector<int64_t> get_ints_n(const KernelConfig& cfg, std::string_view kernel, const char* name,
                                size_t n, std::vector<int64_t> fallback);

}  // namespace of::kernels::cpu

namespace of::kernels::cpu {

// A tensor viewed as [outer, n, inner] around one axis (softmax and its gradient).
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
// Reads attribute "axis" (default: the last) and checks it against `shape`.
AxisView axis_view(const KernelConfig& cfg, std::string_view kernel, const Shape& shape);

// The fused activation the compiler asked for (attribute "activation"): true for "relu", false
// when absent; anything else is refused.
bool fused_relu(const KernelConfig& cfg, std::string_view kernel);

// The windowed kernels (conv, pooling and their gradients) run a 1-D window (nn.Conv1d,
// MaxPool1d, AvgPool1d: [N,C,L], weights [M,C/g,k]) as the 2-D one of height 1, which the
// compiler lowers with 2-D attributes; a 3-D one with 3-D attributes. This is the 1-D window's
// 2-D shape: rank 3 gets a 1 before its last axis.
inline Shape as_2d_window(const Shape& s) { return s.size() == 3 ? Shape{s[0], s[1], 1, s[2]} : s; }
// A window's shape [N, C, spatial...] (1-3 spatial axes) as a 3-D one: [N, C, 1, 1, L] or
// [N, C, 1, H, W]; any other rank is returned as it is.
inline Shape as_3d_window(const Shape& s) {
  if (s.size() < 3 || s.size() > 5) return s;
  Shape t = {s[0], s[1]};
  t.insert(t.end(), 5 - s.size(), 1);
  t.insert(t.end(), s.begin() + 2, s.end());
  return t;
}

// y[i] = max(y[i], 0) over n floats.
void relu_inplace(float* y, int64_t n);

}  // namespace of::kernels::cpu
