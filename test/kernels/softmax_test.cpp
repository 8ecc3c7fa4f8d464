// SPDX-License-Identifier: Apache-2.0
// softmax and log_softmax along every axis against a double reference; large inputs stay finite.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

std::vector<double> reference(const std::vector<float>& x, const Shape& s, int64_t axis, bool log) {
  const auto st = testing::strides_of(s);
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < numel(s); ++i) {
    const auto idx = testing::unravel(i, s);
    if (idx[axis] != 0) continue;  // handle each line once, from its first element
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < s[axis]; ++k) m = std::max(m, double(x[i + k * st[axis]]));
    for (int64_t k = 0; k < s[axis]; ++k) sum += std::exp(x[i + k * st[axis]] - m);
    for (int64_t k = 0; k < s[axis]; ++k) {
      const double v = x[i + k * st[axis]] - m;
      y[i + k * st[axis]] = log ? v - std::log(sum) : std::exp(v) / sum;
    }
  }
  return y;
}

TEST_CASE("softmax/log_softmax: every axis matches double reference", "[kernels]") {
  std::mt19937 rng(11);
  for (const Shape& s : {Shape{3, 4, 5}, Shape{2, 3, 1, 7}, Shape{9}, Shape{2, 40}}) {
    const auto x = testing::random_floats(numel(s), rng, -5.0f, 5.0f);
    for (int64_t axis = 0; axis < static_cast<int64_t>(s.size()); ++axis)
      for (bool log : {false, true}) {
        INFO(shape_str(s) << " axis " << axis << (log ? " log" : ""));
        Attrs attrs;
        attrs.set_int("axis", axis);
        const auto y = testing::run_f32(log ? "log_softmax" : "softmax", attrs, {s}, {x}, s);
        testing::check_close(y, reference(x, s, axis, log));
      }
  }
}

TEST_CASE("softmax: inputs near 1e4 stay finite (max is subtracted)", "[kernels]") {
  const Shape s{2, 3};
  const std::vector<float> x = {10000.0f, 9999.0f, 9998.0f, -10000.0f, -9999.0f, -9998.0f};
  for (int64_t axis : {0, 1})
    for (bool log : {false, true}) {
      Attrs attrs;
      attrs.set_int("axis", axis);
      const auto y = testing::run_f32(log ? "log_softmax" : "softmax", attrs, {s}, {x}, s);
      testing::check_close(y, reference(x, s, axis, log));
    }
}

TEST_CASE("softmax: bad configs throw of::Error", "[kernels]") {
  Attrs axis3;
  axis3.set_int("axis", 3);
  testing::check_rejects("softmax", axis3, {{2, 3, 4}}, {{2, 3, 4}});
  Attrs axis_neg;
  axis_neg.set_int("axis", -1);
  testing::check_rejects("log_softmax", axis_neg, {{2, 3}}, {{2, 3}});
  testing::check_rejects("softmax", Attrs{}, {{2, 3}}, {{3, 2}});
}

}  // namespace
}  // namespace of::kernels
