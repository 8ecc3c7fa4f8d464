// SPDX-License-Identifier: Apache-2.0
// 3-D convolution (nn.Conv3d: X [N,C,D,H,W], W [M,C/g,kD,kH,kW], three axes of attributes): conv
// against a direct convolution in double, conv_grad_data and conv_grad_weight against its central
// differences; strides, asymmetric pads, dilations, groups, the 1x1x1 path without im2col, and 16
// or more input channels (oneDNN's primitives). A 3-D window of depth 1 gives the 2-D result.
#include <cstring>

#include "grad_check.h"

namespace of::kernels {
namespace {

struct Conv3dCase {
  Shape x, w;                              // [N,C,D,H,W], [M,C/g,kD,kH,kW]
  std::vector<int64_t> strides, pads, dilations;  // 3, 6 (begin..., end...), 3
  int64_t group;
};

Shape y_shape(const Conv3dCase& c) {
  Shape y{c.x[0], c.w[0]};
  for (int a = 0; a < 3; ++a)
    y.push_back((c.x[2 + a] + c.pads[a] + c.pads[3 + a] - c.dilations[a] * (c.w[2 + a] - 1) - 1) / c.strides[a] + 1);
  return y;
}

// The direct convolution, optionally with a bias per output channel.
std::vector<double> conv_ref(const Conv3dCase& c, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>* bias = nullptr) {
  const Shape y = y_shape(c);
  const int64_t cg = c.x[1] / c.group, mg = c.w[0] / c.group;
  const int64_t d = c.x[2], h = c.x[3], wd = c.x[4], kd = c.w[2], kh = c.w[3], kw = c.w[4];
  std::vector<double> out;
  for (int64_t b = 0; b < y[0]; ++b)
    for (int64_t m = 0; m < y[1]; ++m)
      for (int64_t oz = 0; oz < y[2]; ++oz)
        for (int64_t oy = 0; oy < y[3]; ++oy)
          for (int64_t ox = 0; ox < y[4]; ++ox) {
            double s = bias ? (*bias)[size_t(m)] : 0.0;
            const int64_t g = m / mg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t t = 0; t < kd; ++t)
                for (int64_t i = 0; i < kh; ++i)
                  for (int64_t j = 0; j < kw; ++j) {
                    const int64_t iz = oz * c.strides[0] - c.pads[0] + t * c.dilations[0];
                    const int64_t iy = oy * c.strides[1] - c.pads[1] + i * c.dilations[1];
                    const int64_t ix = ox * c.strides[2] - c.pads[2] + j * c.dilations[2];
                    if (iz < 0 || iz >= d || iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                    s += x[size_t((((b * c.x[1] + g * cg + ci) * d + iz) * h + iy) * wd + ix)] *
                         w[size_t((((m * cg + ci) * kd + t) * kh + i) * kw + j)];
                  }
            out.push_back(s);
          }
  return out;
}

Attrs conv_attrs(const Conv3dCase& c) {
  Attrs a;
  a.set_ints("strides", c.strides);
  a.set_ints("pads", c.pads);
  a.set_ints("dilations", c.dilations);
  a.set_int("group", c.group);
  return a;
}

void check_conv_3d(const Conv3dCase& c) {
  INFO("X " << shape_str(c.x) << " W " << shape_str(c.w) << " group " << c.group);
  std::mt19937 rng(41);
  const Shape y = y_shape(c);
  const auto x = testing::random_floats(numel(c.x), rng), w = testing::random_floats(numel(c.w), rng);
  const auto bias = testing::random_floats(c.w[0], rng), r = testing::random_floats(numel(y), rng);
  const auto xd = testing::to_double(x), wd = testing::to_double(w), bd = testing::to_double(bias), rd = testing::to_double(r);
  testing::check_close(testing::run_f32("conv", conv_attrs(c), {c.x, c.w, {c.w[0]}}, {x, w, bias}, y), conv_ref(c, xd, wd, &bd));
  const testing::DoubleFn f_x = [&](const std::vector<double>& in) { return conv_ref(c, in, wd); };
  testing::check_grad(testing::run_f32("conv_grad_data", conv_attrs(c), {y, c.w}, {r, w}, c.x), testing::numeric_grad(f_x, xd, rd));
  const testing::DoubleFn f_w = [&](const std::vector<double>& in) { return conv_ref(c, xd, in); };
  testing::check_grad(testing::run_f32("conv_grad_weight", conv_attrs(c), {y, c.x}, {r, x}, c.w), testing::numeric_grad(f_w, wd, rd));
}

TEST_CASE("conv 3-D and its gradients: padded 3x3x3 and torchvision's video stems", "[kernels]") {
  check_conv_3d({{2, 3, 4, 6, 6}, {4, 3, 3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1});
  check_conv_3d({{1, 3, 4, 9, 9}, {4, 3, 3, 7, 7}, {1, 2, 2}, {1, 3, 3, 1, 3, 3}, {1, 1, 1}, 1});  // r3d_18's stem
  check_conv_3d({{1, 3, 4, 8, 8}, {5, 3, 1, 7, 7}, {1, 2, 2}, {0, 3, 3, 0, 3, 3}, {1, 1, 1}, 1});  // r2plus1d_18's
  check_conv_3d({{1, 5, 5, 4, 4}, {3, 5, 3, 1, 1}, {1, 1, 1}, {1, 0, 0, 1, 0, 0}, {1, 1, 1}, 1});
}

TEST_CASE("conv 3-D and its gradients: strides, asymmetric pads, dilations and groups", "[kernels]") {
  check_conv_3d({{1, 4, 7, 6, 5}, {6, 2, 3, 2, 3}, {2, 1, 2}, {1, 0, 2, 0, 1, 1}, {1, 2, 1}, 2});
  check_conv_3d({{2, 2, 5, 7, 6}, {3, 2, 2, 3, 2}, {1, 3, 2}, {0, 2, 1, 1, 0, 0}, {2, 1, 1}, 1});
  check_conv_3d({{1, 4, 4, 4, 4}, {4, 1, 3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 4});  // depthwise
  check_conv_3d({{1, 2, 2, 2, 2}, {2, 2, 3, 3, 3}, {1, 1, 1}, {2, 2, 2, 2, 2, 2}, {1, 1, 1}, 1});  // pad > input
}

TEST_CASE("conv 3-D and its gradients: 1x1x1 (no im2col) and 16 or more input channels (oneDNN)", "[kernels]") {
  check_conv_3d({{2, 4, 3, 3, 3}, {6, 4, 1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, 1});
  check_conv_3d({{1, 16, 3, 4, 4}, {8, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1});
  check_conv_3d({{2, 16, 4, 5, 5}, {4, 16, 3, 1, 1}, {2, 1, 1}, {1, 0, 0, 1, 0, 0}, {1, 1, 1}, 1});
  check_conv_3d({{1, 17, 3, 5, 4}, {3, 17, 1, 3, 2}, {1, 2, 1}, {0, 1, 0, 0, 1, 1}, {1, 1, 2}, 1});
}

// The same numbers as a 2-D convolution: a 3-D window of depth 1 over X of depth 1.
TEST_CASE("conv 3-D of depth 1 gives the 2-D conv's bits", "[kernels]") {
  for (int64_t ch : {3, 16}) {
    INFO("channels " << ch);
    std::mt19937 rng(3);
    const Shape x2{2, ch, 7, 6}, w2{5, ch, 3, 3}, y2{2, 5, 4, 3};
    const auto x = testing::random_floats(numel(x2), rng), w = testing::random_floats(numel(w2), rng);
    Attrs a2, a3;
    a2.set_ints("strides", {2, 2});
    a2.set_ints("pads", {1, 1, 1, 0});
    a2.set_ints("dilations", {1, 1});
    a3.set_ints("strides", {1, 2, 2});
    a3.set_ints("pads", {0, 1, 1, 0, 1, 0});
    a3.set_ints("dilations", {1, 1, 1});
    const auto two = testing::run_f32("conv", a2, {x2, w2}, {x, w}, y2);
    const auto three = testing::run_f32("conv", a3, {{2, ch, 1, 7, 6}, {5, ch, 1, 3, 3}}, {x, w}, {2, 5, 1, 4, 3});
    REQUIRE(two.size() == three.size());
    CHECK(std::memcmp(two.data(), three.data(), two.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("conv 3-D: bad configs throw of::Error", "[kernels]") {
  Attrs two_axes;
  two_axes.set_ints("strides", {1, 1});
  testing::check_rejects("conv", two_axes, {{1, 3, 4, 5, 5}, {4, 3, 3, 3, 3}}, {{1, 4, 2, 3, 3}});  // 3-D needs 3 strides
  Attrs none;
  testing::check_rejects("conv", none, {{1, 3, 4, 5, 5}, {4, 3, 3, 3, 3}}, {{1, 4, 2, 3, 4}});      // output shape
  testing::check_rejects("conv", none, {{1, 3, 4, 5, 5}, {4, 3, 3, 3}}, {{1, 4, 2, 3, 3}});         // 3-D X, 2-D W
  testing::check_rejects("conv", none, {{1, 3, 2, 5, 5}, {4, 3, 3, 3, 3}}, {{1, 4, 0, 3, 3}});      // too shallow
  testing::check_rejects("conv", none, {{1, 3, 2, 2, 5, 5}, {4, 3, 1, 3, 3, 3}}, {{1, 4, 2, 0, 3, 3}});  // 4-D
  testing::check_rejects("conv_grad_weight", none, {{1, 4, 2, 3, 3}, {1, 3, 4, 5, 5}}, {{4, 3, 3, 3}});
}

}  // namespace
}  // namespace of::kernels
