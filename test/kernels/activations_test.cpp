// SPDX-License-Identifier: Apache-2.0
// relu, sigmoid, tanh against double references, including sigmoid at large |x|.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

TEST_CASE("relu/sigmoid/tanh: match double reference", "[kernels]") {
  std::mt19937 rng(5);
  const Shape s{3, 7, 11};
  auto x = testing::random_floats(numel(s), rng, -8.0f, 8.0f);
  x[0] = 0.0f;
  const std::vector<std::pair<const char*, double (*)(double)>> ops = {
      {"relu", [](double v) { return v > 0 ? v : 0.0; }},
      {"sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"tanh", [](double v) { return std::tanh(v); }}};
  for (const auto& [op, fn] : ops) {
    INFO(op);
    std::vector<double> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) ref[i] = fn(x[i]);
    testing::check_close(testing::run_f32(op, Attrs{}, {s}, {x}, s), ref);
  }
}

TEST_CASE("sigmoid: large |x| saturates without inf or NaN", "[kernels]") {
  const std::vector<float> x = {-1e30f, -1000.0f, -100.0f, -88.8f, 88.8f, 100.0f, 1000.0f, 1e30f};
  const Shape s{static_cast<int64_t>(x.size())};
  const auto y = testing::run_f32("sigmoid", Attrs{}, {s}, {x}, s);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i] << ", y = " << y[i]);
    CHECK(std::isfinite(y[i]));
    CHECK(std::fabs(y[i] - (x[i] > 0 ? 1.0f : 0.0f)) < 1e-6f);
  }
}

TEST_CASE("relu: bad configs throw of::Error", "[kernels]") {
  testing::check_rejects("relu", Attrs{}, {{3, 4}}, {{4, 3}});
  testing::check_rejects("tanh", Attrs{}, {{3}, {3}}, {{3}});
}

}  // namespace
}  // namespace of::kernels
