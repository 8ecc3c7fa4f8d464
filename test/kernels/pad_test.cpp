// SPDX-License-Identifier: Apache-2.0
// pad and pad_grad: small cases written out by hand (torch's ReflectionPad / ReplicationPad /
// ConstantPad results), pad_grad as pad's adjoint (<pad(x), dy> = <x, pad_grad(dy)>, so every
// element's gradient sums exactly what read it) on a 4-D tensor padded on three axes in every
// mode, the constant-mode gradient a crop bit for bit, and the configs the rule refuses.
#include <algorithm>

#include "grad_check.h"

namespace of::kernels {
namespace {

Attrs pad_attrs(const std::vector<int64_t>& pads, const std::string& mode, float value = 0.0f) {
  Attrs a;
  a.set_ints("pads", pads);
  a.set_str("mode", mode);
  a.set_float("value", value);
  return a;
}

TEST_CASE("pad: reflect, edge and constant along one axis, as torch pads", "[kernels]") {
  const std::vector<float> x{1, 2, 3};
  CHECK(testing::run_f32("pad", pad_attrs({2, 2}, "reflect"), {{3}}, {x}, {7}) == std::vector<float>{3, 2, 1, 2, 3, 2, 1});
  CHECK(testing::run_f32("pad", pad_attrs({3, 1}, "edge"), {{3}}, {x}, {7}) == std::vector<float>{1, 1, 1, 1, 2, 3, 3});
  CHECK(testing::run_f32("pad", pad_attrs({2, 1}, "constant", 0.5f), {{3}}, {x}, {6}) ==
        std::vector<float>{0.5f, 0.5f, 1, 2, 3, 0.5f});
  // Their gradients: each input element sums where it was read.
  const std::vector<float> dy{1, 10, 100, 1000, 10000, 100000, 1000000};
  CHECK(testing::run_f32("pad_grad", pad_attrs({2, 2}, "reflect"), {{7}}, {dy}, {3}) ==
        std::vector<float>{100 + 1000000, 10 + 1000 + 100000, 1 + 10000});
  CHECK(testing::run_f32("pad_grad", pad_attrs({3, 1}, "edge"), {{7}}, {dy}, {3}) ==
        std::vector<float>{1 + 10 + 100 + 1000, 10000, 100000 + 1000000});
  CHECK(testing::run_f32("pad_grad", pad_attrs({2, 1}, "constant"), {{6}}, {dy}, {3}) == std::vector<float>{100, 1000, 10000});
}

TEST_CASE("pad: two axes, a row of constant fill and rows padded at their ends", "[kernels]") {
  // [[1,2],[3,4]] padded by one row above and one column on the right.
  CHECK(testing::run_f32("pad", pad_attrs({1, 0, 0, 1}, "constant"), {{2, 2}}, {{1, 2, 3, 4}}, {3, 3}) ==
        std::vector<float>{0, 0, 0, 1, 2, 0, 3, 4, 0});
  // Reflect on both axes: torch.nn.ReflectionPad2d(1) of [[1,2,3],[4,5,6],[7,8,9]]'s first rows.
  const auto y = testing::run_f32("pad", pad_attrs({1, 1, 1, 1}, "reflect"), {{3, 3}}, {{1, 2, 3, 4, 5, 6, 7, 8, 9}}, {5, 5});
  CHECK(y == std::vector<float>{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 8, 7, 8, 9, 8, 5, 4, 5, 6, 5});
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

TEST_CASE("pad_grad is pad's adjoint in every mode, on four axes", "[kernels]") {
  const Shape x{2, 3, 5, 4};
  const std::vector<int64_t> pads{0, 1, 3, 2, 0, 2, 1, 3};  // before: axes 1-3; after: axes 1-3
  const Shape y{2, 6, 9, 9};
  std::mt19937 rng(7);
  const auto xv = testing::random_floats(numel(x), rng);
  const auto dy = testing::random_floats(numel(y), rng);
  for (const char* mode : {"constant", "reflect", "edge"}) {
    INFO(mode);
    const auto px = testing::run_f32("pad", pad_attrs(pads, mode), {x}, {xv}, y);
    const auto dx = testing::run_f32("pad_grad", pad_attrs(pads, mode), {y}, {dy}, x);
    CHECK(std::abs(dot(px, dy) - dot(xv, dx)) <= 1e-9 * numel(y) + 1e-5 * std::abs(dot(px, dy)));
    // Every element of pad(x) is some element of x (or the fill).
    for (float v : px) CHECK((v == 0.0f || std::find(xv.begin(), xv.end(), v) != xv.end()));
  }
  // Constant mode: the gradient is dY's middle, bit for bit.
  const auto dx = testing::run_f32("pad_grad", pad_attrs(pads, "constant"), {y}, {dy}, x);
  for (int64_t i = 0; i < numel(x); ++i) {
    const auto idx = testing::unravel(i, x);
    int64_t src = 0;
    for (size_t d = 0; d < 4; ++d) src = src * y[d] + idx[d] + pads[d];
    REQUIRE(dx[size_t(i)] == dy[size_t(src)]);
  }
}

TEST_CASE("pad: refuses pads that do not fit, naming the node", "[kernels]") {
  testing::check_rejects("pad", pad_attrs({-1, 0}, "constant"), {{3}}, {{2}});      // cropping
  testing::check_rejects("pad", pad_attrs({3, 0}, "reflect"), {{3}}, {{6}});        // reflect beyond the axis
  testing::check_rejects("pad", pad_attrs({1, 1}, "wrap"), {{3}}, {{5}});           // no such mode here
  testing::check_rejects("pad", pad_attrs({1, 1}, "constant"), {{3}}, {{6}});       // output of the wrong size
  testing::check_rejects("pad", pad_attrs({1, 1, 0}, "constant"), {{3}}, {{5}});    // pads not 2 x rank
  testing::check_rejects("pad_grad", pad_attrs({1, 1}, "edge"), {{5}}, {{4}});      // dX not dY unpadded
}

}  // namespace
}  // namespace of::kernels
