// SPDX-License-Identifier: Apache-2.0
// add/sub/mul/div/max/min/prelu against a per-element numpy-broadcast reference in double, over the fast paths
// (same shape, scalar, trailing) and general broadcasts.
#include <cmath>
#include <functional>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

Shape broadcast(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape y(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    y[i] = da == 1 ? db : da;
  }
  return y;
}

// Flat index into `s` of output multi-index `idx` under numpy broadcasting.
int64_t source_index(const std::vector<int64_t>& idx, const Shape& s) {
  const auto st = testing::strides_of(s);
  int64_t off = 0;
  for (size_t i = 0; i < s.size(); ++i)
    off += (s[i] == 1 ? 0 : idx[idx.size() - s.size() + i]) * st[i];
  return off;
}

TEST_CASE("add/sub/mul/div/max/min/prelu: broadcasting shapes match per-element reference", "[kernels]") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 5}, {3, 5}},       {{7}, {}},        {{}, {7}},
      {{2, 3}, {1}},          {{4, 6}, {6}},    {{6}, {4, 6}},
      {{4, 6}, {4, 1}},       {{1, 6}, {4, 1}}, {{2, 3, 4, 5}, {1, 3, 1, 1}},
      {{2, 1, 4}, {3, 1}},    {{}, {}},         {{2, 3, 4, 5}, {3, 4, 5}},
      {{1, 1, 1}, {2, 1, 3}}, {{2, 0, 3}, {3}}, {{2, 1, 3, 1, 2, 1, 2, 1}, {3, 2, 2, 2, 1}},
      {{1031}, {1031}}};
  const std::vector<std::pair<const char*, std::function<double(double, double)>>> ops = {
      {"add", std::plus<double>()},
      {"sub", std::minus<double>()},
      {"mul", std::multiplies<double>()},
      {"div", std::divides<double>()},
      {"max", [](double a, double b) { return std::max(a, b); }},
      {"min", [](double a, double b) { return std::min(a, b); }},
      {"prelu", [](double x, double slope) { return x > 0 ? x : slope * x; }}};
  std::mt19937 rng(3);
  for (const auto& [op, fn] : ops)
    for (const auto& [a, b] : cases) {
      INFO(op << " " << shape_str(a) << " " << shape_str(b));
      const auto av = testing::random_floats(numel(a), rng);
      const auto bv = testing::random_floats(numel(b), rng, 0.5f, 2.0f);  // divisor away from 0
      const Shape y = broadcast(a, b);
      std::vector<double> ref(numel(y));
      for (int64_t i = 0; i < numel(y); ++i) {
        const auto idx = testing::unravel(i, y);
        ref[i] = fn(av[source_index(idx, a)], bv[source_index(idx, b)]);
      }
      testing::check_close(testing::run_f32(op, Attrs{}, {a, b}, {av, bv}, y), ref);
    }
}

TEST_CASE("pow_tensor: a tensor exponent broadcasts, and negative bases, zeros and NaN follow std::pow", "[kernels]") {
  std::mt19937 rng(9);
  for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{{{4, 6}, {1}}, {{2, 3, 4}, {3, 1}}, {{5}, {5}}, {{}, {2, 2}}}) {
    INFO(shape_str(a) << " " << shape_str(b));
    const auto av = testing::random_floats(numel(a), rng, 0.1f, 2.0f), bv = testing::random_floats(numel(b), rng, -2.0f, 3.0f);
    const Shape y = broadcast(a, b);
    std::vector<double> ref(numel(y));
    for (int64_t i = 0; i < numel(y); ++i) {
      const auto idx = testing::unravel(i, y);
      ref[i] = std::pow(double(av[source_index(idx, a)]), double(bv[source_index(idx, b)]));
    }
    testing::check_close(testing::run_f32("pow_tensor", Attrs{}, {a, b}, {av, bv}, y), ref);
  }
  const auto special = testing::run_f32("pow_tensor", Attrs{}, {{5}, {5}}, {{-2.0f, 0.0f, 0.0f, -8.0f, 4.0f}, {2.0f, 0.0f, 2.5f, 1.0f / 3, 0.5f}}, {5});
  CHECK(special[0] == 4.0f);   // a negative base to an integral power
  CHECK(special[1] == 1.0f);   // 0 ** 0
  CHECK(special[2] == 0.0f);
  CHECK(std::isnan(special[3]));  // a negative base to a fractional power, as torch
  CHECK(special[4] == 2.0f);
}

TEST_CASE("max/min: a NaN on either side gives NaN, as torch.maximum and torch.minimum", "[kernels]") {
  const std::vector<float> a = {NAN, 1.0f, 2.0f, -0.0f, 3.0f}, b = {1.0f, NAN, 2.0f, 0.0f, -3.0f};
  const auto mx = testing::run_f32("max", Attrs{}, {{5}, {5}}, {a, b}, {5});
  const auto mn = testing::run_f32("min", Attrs{}, {{5}, {5}}, {a, b}, {5});
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(std::isnan(mn[0]));
  CHECK(std::isnan(mn[1]));
  CHECK(mx[2] == 2.0f);
  CHECK(mn[2] == 2.0f);
  CHECK(mx[3] == 0.0f);
  CHECK(mx[4] == 3.0f);
  CHECK(mn[4] == -3.0f);
}

TEST_CASE("add: bad configs throw of::Error", "[kernels]") {
  Attrs none;
  testing::check_rejects("add", none, {{3, 4}, {3}}, {{3, 4}});            // not broadcastable
  testing::check_rejects("sub", none, {{3, 4}, {4}}, {{4, 4}});            // output shape
  testing::check_rejects("mul", none, {{3, 4}}, {{3, 4}});                 // arity
  testing::check_rejects("div", none, {Shape(9, 1), {1}}, {Shape(9, 1)});  // rank > 8
}

}  // namespace
}  // namespace of::kernels
