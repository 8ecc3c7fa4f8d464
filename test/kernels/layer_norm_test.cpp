// SPDX-License-Identifier: Apache-2.0
// Tests for kernels/cpu/layer_norm.cpp: layer_norm against a double reference, layer_norm_grad
// (dX) and layer_norm_scale_grad (dScale) against double central differences of it, bad configs.
#include <cmath>

#include "grad_check.h"
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

using testing::check_grad;
using testing::numeric_grad;
using testing::random_floats;
using testing::to_double;

constexpr int64_t kRows = 6, kN = 10;
constexpr double kEps = 1e-5;

// y = (x - mean) / sqrt(var + eps) * scale + bias per row of kN, in double.
std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& scale,
                              const std::vector<double>& bias) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < kRows; ++r) {
    const double* xr = x.data() + r * kN;
    double mean = 0, var = 0;
    for (int64_t k = 0; k < kN; ++k) mean += xr[k] / kN;
    for (int64_t k = 0; k < kN; ++k) var += (xr[k] - mean) * (xr[k] - mean) / kN;
    for (int64_t k = 0; k < kN; ++k)
      y[size_t(r * kN + k)] = (xr[k] - mean) / std::sqrt(var + kEps) * scale[size_t(k)] + bias[size_t(k)];
  }
  return y;
}

Attrs last_axis() {
  Attrs a;
  a.set_int("axis", 1);
  return a;
}

TEST_CASE("layer_norm: matches a double reference, and its two gradients match finite differences", "[kernels]") {
  std::mt19937 rng(41);
  const auto x = random_floats(kRows * kN, rng, -2, 2), scale = random_floats(kN, rng, 0.5f, 1.5f),
             bias = random_floats(kN, rng), dy = random_floats(kRows * kN, rng);
  const Attrs attrs = last_axis();
  const auto y = testing::run_f32("layer_norm", attrs, {{kRows, kN}, {kN}, {kN}}, {x, scale, bias}, {kRows, kN});
  testing::check_close(y, reference(to_double(x), to_double(scale), to_double(bias)));

  const auto dx = testing::run_f32("layer_norm_grad", attrs, {{kRows, kN}, {kRows, kN}, {kN}}, {dy, x, scale}, {kRows, kN});
  check_grad(dx, numeric_grad([&](const std::vector<double>& at) { return reference(at, to_double(scale), to_double(bias)); },
                              to_double(x), to_double(dy)));
  const auto dscale = testing::run_f32("layer_norm_scale_grad", attrs, {{kRows, kN}, {kRows, kN}}, {dy, x}, {kN});
  check_grad(dscale, numeric_grad([&](const std::vector<double>& at) { return reference(to_double(x), at, to_double(bias)); },
                                  to_double(scale), to_double(dy)));
}

TEST_CASE("layer_norm: bad configs throw of::Error", "[kernels]") {
  const Attrs attrs = last_axis();
  testing::check_rejects("layer_norm", attrs, {{kRows, kN}, {kN + 1}}, {{kRows, kN}});  // scale size
  Attrs far;
  far.set_int("axis", 2);
  testing::check_rejects("layer_norm", far, {{kRows, kN}, {kN}}, {{kRows, kN}});  // axis
  Attrs eps = last_axis();
  eps.set_float("epsilon", 0.0f);
  testing::check_rejects("layer_norm", eps, {{kRows, kN}, {kN}}, {{kRows, kN}});
  testing::check_rejects("layer_norm_grad", attrs, {{kRows, kN}, {kRows, kN}, {kN - 1}}, {{kRows, kN}});
  testing::check_rejects("layer_norm_scale_grad", attrs, {{kRows, kN}, {kRows, kN}}, {{kN + 2}});
}

}  // namespace
}  // namespace of::kernels
