// SPDX-License-Identifier: Apache-2.0
// instance_norm against a double reference (each (n, c) row normalized alone, its channel's scale
// and bias); its gradients against double central differences of that reference; bad configs.
#include <cmath>

#include "grad_check.h"

namespace of::kernels {
namespace {

const Shape x_shape{3, 4, 5, 6};
constexpr int64_t kChannels = 4, kRow = 30;
constexpr float kEps = 1e-5f;

Attrs eps_attrs() {
  Attrs a;
  a.set_float("epsilon", kEps);
  return a;
}

std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& scale, const std::vector<double>& bias) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / kRow; ++r) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < kRow; ++k) mean += x[r * kRow + k];
    mean /= kRow;
    for (int64_t k = 0; k < kRow; ++k) var += (x[r * kRow + k] - mean) * (x[r * kRow + k] - mean);
    var /= kRow;
    const size_t c = r % kChannels;
    for (int64_t k = 0; k < kRow; ++k) y[r * kRow + k] = (x[r * kRow + k] - mean) / std::sqrt(var + kEps) * scale[c] + bias[c];
  }
  return y;
}

TEST_CASE("instance_norm: each (n, c) row normalized alone, its channel's scale and bias", "[kernels]") {
  std::mt19937 rng(17);
  const auto x = testing::random_floats(numel(x_shape), rng, -3, 5);
  const auto scale = testing::random_floats(kChannels, rng, 0.5f, 2), bias = testing::random_floats(kChannels, rng);
  const auto got = testing::run_f32("instance_norm", eps_attrs(), {x_shape, {kChannels}, {kChannels}}, {x, scale, bias}, x_shape);
  testing::check_close(got, reference(testing::to_double(x), testing::to_double(scale), testing::to_double(bias)));
}

TEST_CASE("instance_norm_grad and instance_norm_scale_grad: match finite differences", "[kernels]") {
  std::mt19937 rng(19);
  const auto x = testing::random_floats(numel(x_shape), rng, -3, 5);
  const auto scale = testing::random_floats(kChannels, rng, 0.5f, 2), bias = testing::random_floats(kChannels, rng);
  const auto dy = testing::random_floats(numel(x_shape), rng);
  const auto xd = testing::to_double(x), sd = testing::to_double(scale), bd = testing::to_double(bias);
  const auto dx_ref = testing::numeric_grad([&](const std::vector<double>& v) { return reference(v, sd, bd); }, xd, testing::to_double(dy));
  testing::check_grad(testing::run_f32("instance_norm_grad", eps_attrs(), {x_shape, x_shape, {kChannels}}, {dy, x, scale}, x_shape), dx_ref);
  const auto ds_ref = testing::numeric_grad([&](const std::vector<double>& v) { return reference(xd, v, bd); }, sd, testing::to_double(dy));
  testing::check_grad(testing::run_f32("instance_norm_scale_grad", eps_attrs(), {x_shape, x_shape}, {dy, x}, {kChannels}), ds_ref);
}

TEST_CASE("instance_norm: bad configs throw of::Error", "[kernels]") {
  testing::check_rejects("instance_norm", eps_attrs(), {{3, 4}, {4}, {4}}, {{3, 4}});                 // no positions axis
  testing::check_rejects("instance_norm", eps_attrs(), {x_shape, {3}, {4}}, {x_shape});                // scale per channel
  testing::check_rejects("instance_norm_grad", eps_attrs(), {x_shape, {3, 4, 5, 5}, {4}}, {x_shape});  // dY and X
  testing::check_rejects("instance_norm_scale_grad", eps_attrs(), {x_shape, x_shape}, {{3}});          // dscale per channel
}

}  // namespace
}  // namespace of::kernels
