// SPDX-License-Identifier: Apache-2.0
// resize: torch's nn.Upsample results on small inputs (nearest, bilinear with and without
// align_corners, 1-D linear, bicubic up and down), resize_grad as its adjoint (<resize(x), dy> = <x, resize_grad(dy)>)
// in every mode, and the configs the rule refuses.
#include "grad_check.h"

namespace of::kernels {
namespace {

Attrs resize_attrs(const std::string& mode, const std::string& coord, std::vector<float> scales, const std::string& nearest = "floor") {
  Attrs a;
  a.set_str("mode", mode);
  a.set_str("coord", coord);
  a.set_str("nearest_mode", nearest);
  a.set_floats("scales", std::move(scales));
  return a;
}

void check_near(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
}

TEST_CASE("resize: nn.Upsample's nearest, bilinear and align_corners results", "[kernels]") {
  // nn.Upsample(scale_factor=2) of [[1,2],[3,4]]: what torch exports as asymmetric, floor.
  CHECK(testing::run_f32("resize", resize_attrs("nearest", "asymmetric", {2, 2}), {{1, 1, 2, 2}}, {{1, 2, 3, 4}}, {1, 1, 4, 4}) ==
        std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // F.interpolate(scale_factor=2, mode="linear") of [1, 2]: align_corners=False, then True.
  check_near(testing::run_f32("resize", resize_attrs("linear", "pytorch_half_pixel", {2}), {{1, 1, 2}}, {{1, 2}}, {1, 1, 4}),
             {1, 1.25f, 1.75f, 2});
  check_near(testing::run_f32("resize", resize_attrs("linear", "align_corners", {2}), {{1, 1, 2}}, {{1, 2}}, {1, 1, 4}),
             {1, 4.0f / 3, 5.0f / 3, 2});
  // Bilinear on two axes: the 2x2 corners, and the middle of the 3x3 output is their mean.
  const auto y = testing::run_f32("resize", resize_attrs("linear", "align_corners", {1.5f, 1.5f}), {{1, 1, 2, 2}}, {{0, 2, 4, 6}}, {1, 1, 3, 3});
  check_near(y, {0, 1, 2, 2, 3, 4, 4, 5, 6});
}

TEST_CASE("resize: F.interpolate's bicubic results, up and down, with and without align_corners", "[kernels]") {
  // torch 1.13: F.interpolate(x, scale_factor=2, mode="bicubic") of [[1,2],[3,4]] (edges clamped,
  // A = -0.75), then size=(3, 3) with align_corners=True, then 4x4 arange at scale 0.5.
  check_near(testing::run_f32("resize", resize_attrs("cubic", "pytorch_half_pixel", {2, 2}), {{1, 1, 2, 2}}, {{1, 2, 3, 4}}, {1, 1, 4, 4}),
             {0.68359375f, 1.015625f, 1.5625f, 1.89453125f, 1.34765625f, 1.6796875f, 2.2265625f, 2.55859375f, 2.44140625f, 2.7734375f,
              3.3203125f, 3.65234375f, 3.10546875f, 3.4375f, 3.984375f, 4.31640625f});
  check_near(testing::run_f32("resize", resize_attrs("cubic", "align_corners", {1.5f, 1.5f}), {{1, 1, 2, 2}}, {{1, 2, 3, 4}}, {1, 1, 3, 3}),
             {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
  std::vector<float> ramp(16);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = float(i);
  check_near(testing::run_f32("resize", resize_attrs("cubic", "pytorch_half_pixel", {0.5f, 0.5f}), {{1, 1, 4, 4}}, {ramp}, {1, 1, 2, 2}),
             {2.03125f, 4.21875f, 10.78125f, 12.96875f});
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

TEST_CASE("resize_grad is resize's adjoint, nearest, linear and cubic, every coordinate mode, up and down", "[kernels]") {
  std::mt19937 rng(3);
  struct Case {
    Shape x, y;
    std::vector<float> scales;
  };
  for (const Case& c : {Case{{2, 3, 5, 4}, {2, 3, 10, 8}, {2, 2}}, Case{{2, 3, 9, 7}, {2, 3, 4, 3}, {0.5f, 0.5f}},
                        Case{{1, 2, 6}, {1, 2, 15}, {2.5f}}})
    for (const char* mode : {"nearest", "linear", "cubic"})
      for (const char* coord : {"asymmetric", "half_pixel", "pytorch_half_pixel", "align_corners"}) {
        INFO(mode << " " << coord << " " << shape_str(c.x) << " -> " << shape_str(c.y));
        const Attrs a = resize_attrs(mode, coord, c.scales, "round_prefer_ceil");
        const auto x = testing::random_floats(numel(c.x), rng), dy = testing::random_floats(numel(c.y), rng);
        const auto y = testing::run_f32("resize", a, {c.x}, {x}, c.y);
        const auto dx = testing::run_f32("resize_grad", a, {c.y}, {dy}, c.x);
        CHECK(std::abs(dot(y, dy) - dot(x, dx)) <= 1e-4 * (1 + std::abs(dot(y, dy))));
      }
}

TEST_CASE("resize: refuses what it cannot read, naming the node", "[kernels]") {
  testing::check_rejects("resize", resize_attrs("lanczos", "asymmetric", {2, 2}), {{1, 1, 2, 2}}, {{1, 1, 4, 4}});
  testing::check_rejects("resize", resize_attrs("nearest", "tf_crop_and_resize", {2, 2}), {{1, 1, 2, 2}}, {{1, 1, 4, 4}});
  testing::check_rejects("resize", resize_attrs("nearest", "asymmetric", {2}), {{1, 1, 2, 2}}, {{1, 1, 4, 4}});        // scales per axis
  testing::check_rejects("resize", resize_attrs("nearest", "asymmetric", {2, 2}), {{1, 1, 2, 2}}, {{1, 2, 4, 4}});     // channels
  testing::check_rejects("resize", resize_attrs("nearest", "asymmetric", {0, 2}), {{1, 1, 2, 2}}, {{1, 1, 4, 4}});     // scale 0
}

}  // namespace
}  // namespace of::kernels
