// SPDX-License-Identifier: Apache-2.0
// reduce_max over inner, outer, middle and all axes against a reference, a NaN winning; its
// gradient dY at each output's first maximum (ties included), zeros elsewhere; bad configs.
#include <cmath>
#include <limits>

#include "grad_check.h"

namespace of::kernels {
namespace {

Attrs axes_attrs(std::vector<int64_t> axes, int64_t keepdims) {
  Attrs a;
  a.set_ints("axes", std::move(axes));
  a.set_int("keepdims", keepdims);
  return a;
}

TEST_CASE("reduce_max and its gradient: the maximum, and dY at its first position", "[kernels]") {
  const Shape x{3, 4, 5};
  std::mt19937 rng(21);
  auto xv = testing::random_floats(numel(x), rng);
  for (float& v : xv) v = std::round(v * 4) / 4;  // few values: ties
  struct Case {
    std::vector<int64_t> axes;
    Shape y;
  };
  for (const Case& c : {Case{{2}, {3, 4}}, Case{{0}, {4, 5}}, Case{{1}, {3, 5}}, Case{{0, 2}, {4}}, Case{{0, 1, 2}, {}}}) {
    INFO("axes " << c.axes.size() << " first " << c.axes[0]);
    const Attrs a = axes_attrs(c.axes, 0);
    const auto y = testing::run_f32("reduce_max", a, {x}, {xv}, c.y);
    std::vector<float> want(size_t(numel(c.y)), -std::numeric_limits<float>::infinity());
    std::vector<int64_t> first(want.size(), -1);
    for (int64_t i = 0; i < numel(x); ++i) {  // in memory order: the first maximum wins a tie
      const auto idx = testing::unravel(i, x);
      int64_t o = 0;
      for (size_t d = 0; d < 3; ++d)
        if (std::find(c.axes.begin(), c.axes.end(), int64_t(d)) == c.axes.end()) o = o * x[d] + idx[d];
      if (xv[size_t(i)] > want[size_t(o)]) {
        want[size_t(o)] = xv[size_t(i)];
        first[size_t(o)] = i;
      }
    }
    CHECK(y == want);
    const auto dy = testing::random_floats(numel(c.y), rng);
    const auto dx = testing::run_f32("reduce_max_grad", a, {c.y, x, c.y}, {dy, xv, y}, x);
    std::vector<float> want_dx(size_t(numel(x)), 0.0f);
    for (size_t o = 0; o < first.size(); ++o) want_dx[size_t(first[o])] = dy[o];
    CHECK(dx == want_dx);
  }
}

TEST_CASE("reduce_max: a NaN is the maximum and takes the gradient", "[kernels]") {
  const float nan = std::nanf("");
  const auto y = testing::run_f32("reduce_max", axes_attrs({1}, 1), {{2, 3}}, {{1, nan, 5, 2, 3, 1}}, {2, 1});
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == 3);
  CHECK(testing::run_f32("reduce_max_grad", axes_attrs({1}, 1), {{2, 1}, {2, 3}, {2, 1}}, {{7, 9}, {1, nan, 5, 2, 3, 1}, y}, {2, 3}) ==
        std::vector<float>{0, 7, 0, 0, 9, 0});
}

TEST_CASE("reduce_max: bad configs throw of::Error", "[kernels]") {
  testing::check_rejects("reduce_max", axes_attrs({1}, 0), {{2, 3}}, {{3}});           // output shape
  testing::check_rejects("reduce_max", axes_attrs({2, 1}, 0), {{2, 3, 4}}, {{2}});     // unsorted axes
  testing::check_rejects("reduce_max", axes_attrs({1}, 0), {{2, 0}}, {{2}});           // an empty reduced axis
  testing::check_rejects("reduce_max_grad", axes_attrs({1}, 0), {{2}, {2, 3}, {3}}, {{2, 3}});  // Y's shape
}

}  // namespace
}  // namespace of::kernels

namespace of::kernels {
namespace {

std::vector<int64_t> run_argmax(const Shape& x, const std::vector<float>& data, int64_t axis, bool keep, bool last, const Shape& y) {
  Attrs a;
  a.set_ints("axes", {axis});
  a.set_int("keepdims", keep);
  a.set_int("select_last_index", last);
  auto kernel = make_kernel("argmax", DeviceKind::cpu, DType::i64, KernelConfig{a, {{x, DType::f32}}, {{y, DType::i64}}, "test_node"});
  std::vector<int64_t> out(size_t(numel(y)), -7);
  const void* in[] = {data.data()};
  void* outs[] = {out.data()};
  kernel->run({}, in, outs);
  return out;
}

TEST_CASE("argmax: the first maximum (or the last), a NaN wins, any axis", "[kernels]") {
  // [2, 4]: ties at 3 in row 0, a NaN in row 1.
  const std::vector<float> x = {1.0f, 3.0f, 3.0f, -1.0f, 0.0f, 2.0f, NAN, 5.0f};
  CHECK(run_argmax({2, 4}, x, 1, false, false, {2}) == std::vector<int64_t>{1, 2});
  CHECK(run_argmax({2, 4}, x, 1, true, true, {2, 1}) == std::vector<int64_t>{2, 2});
  CHECK(run_argmax({2, 4}, x, 0, false, false, {4}) == std::vector<int64_t>{0, 0, 1, 1});
  Attrs two;
  two.set_ints("axes", {0, 1});
  CHECK_THROWS_WITH(make_kernel("argmax", DeviceKind::cpu, DType::i64, KernelConfig{two, {{{2, 4}, DType::f32}}, {{{}, DType::i64}}, "n"}),
                    Catch::Contains("argmax: reduces one axis"));
}

}  // namespace
}  // namespace of::kernels
