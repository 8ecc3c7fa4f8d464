// SPDX-License-Identifier: Apache-2.0
// exp(t) = 2^k * exp(r) with k = round(t / ln 2) and |r| <= ln(2) / 2, r taken with ln 2 in two
// parts (k * ln2_hi is exact) and exp(r) from its Taylor series to degree 11 (truncation below
// 1e-14 relative). Every step is plain double arithmetic and integer bit moves, so the loop
// vectorizes (vector_clones.h).
#include "kernels/cpu/vector_exp.h"

#include <bit>

#include "kernels/cpu/vector_clones.h"

namespace of::kernels::cpu {
namespace {

inline double exp_of(double t) {
  // Beyond these exp rounds to float 0 or inf anyway; clamping keeps 2^k a normal double.
  // Comparisons are false for NaN, which passes through to the result.
  t = t < -104.0 ? -104.0 : t;
  t = t > 89.0 ? 89.0 : t;
  constexpr double inv_ln2 = 1.4426950408889634074;
  constexpr double ln2_hi = 6.93147180369123816490e-01;  // its last 32 bits are zero
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double shifter = 0x1.8p52;  // adding it rounds to an integer held in the low bits
  const double kd = t * inv_ln2 + shifter;
  const double k = kd - shifter;
  const double r = (t - k * ln2_hi) - k * ln2_lo;
  double p = 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int64_t ki = std::bit_cast<int64_t>(kd) - std::bit_cast<int64_t>(shifter);
  return p * std::bit_cast<double>((ki + 1023) << 52);
}

}  // namespace

OF_VECTOR_CLONES void exp_shifted(const float* x, float shift, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(exp_of(static_cast<double>(x[i] - shift)));
}

OF_VECTOR_CLONES void exp_minus(const float* x, const float* shift, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(exp_of(static_cast<double>(x[i] - shift[i])));
}

}  // namespace of::kernels::cpu
