// SPDX-License-Identifier: Apache-2.0
// softmax_grad and log_softmax_grad against double central differences of softmax/log_softmax
// along the last and non-last axes.
#include <cmath>

#include "grad_check.h"

namespace of::kernels {
namespace {

// softmax (log_softmax when `log`) of x along `axis`, in double.
std::vector<double> softmax_ref(const std::vector<double>& x, const Shape& s, int64_t axis,
                                bool log) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t n = s[axis];
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + j; };
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x[at(k)]);
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < n; ++k)
        y[at(k)] = log ? x[at(k)] - m - std::log(sum) : std::exp(x[at(k)] - m) / sum;
    }
  return y;
}

void check_softmax_grad(const Shape& s, int64_t axis, bool log) {
  std::mt19937 rng(11);
  const auto x = testing::to_double(testing::random_floats(numel(s), rng, -2.0f, 2.0f));
  const auto r = testing::to_double(testing::random_floats(numel(s), rng));
  const auto y = testing::to_float(softmax_ref(x, s, axis, log));
  const testing::DoubleFn f = [&](const std::vector<double>& in) {
    return softmax_ref(in, s, axis, log);
  };
  Attrs attrs;
  attrs.set_int("axis", axis);
  const char* name = log ? "log_softmax_grad" : "softmax_grad";
  INFO(name << " " << shape_str(s) << " axis " << axis);
  testing::check_grad(testing::run_f32(name, attrs, {s, s}, {testing::to_float(r), y}, s),
                      testing::numeric_grad(f, x, r));
}

TEST_CASE("softmax_grad: last and non-last axes match finite differences", "[kernels]") {
  check_softmax_grad({4, 7}, 1, false);
  check_softmax_grad({4, 7}, 0, false);
  check_softmax_grad({3, 5, 4}, 1, false);
  check_softmax_grad({2, 3, 4, 5}, 2, false);
}

TEST_CASE("log_softmax_grad: last and non-last axes match finite differences", "[kernels]") {
  check_softmax_grad({4, 7}, 1, true);
  check_softmax_grad({4, 7}, 0, true);
  check_softmax_grad({3, 5, 4}, 1, true);
  check_softmax_grad({2, 3, 4, 5}, 2, true);
}

TEST_CASE("softmax_grad: bad configs throw of::Error", "[kernels]") {
  Attrs axis3;
  axis3.set_int("axis", 3);
  for (const char* name : {"softmax_grad", "log_softmax_grad"}) {
    testing::check_rejects(name, axis3, {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}});  // axis
    testing::check_rejects(name, Attrs{}, {{2, 3, 4}, {2, 3, 5}}, {{2, 3, 4}});  // y shape
    testing::check_rejects(name, Attrs{}, {{2, 3, 4}}, {{2, 3, 4}});             // arity
  }
}

}  // namespace
}  // namespace of::kernels
