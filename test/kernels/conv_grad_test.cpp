// SPDX-License-Identifier: Apache-2.0
// conv_grad_data and conv_grad_weight against double central differences of a direct conv
// reference: strides, asymmetric pads, dilations, groups, depthwise, 1x1, and input rows that
// no window reads.
#include "grad_check.h"

namespace of::kernels {
namespace {

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

Shape y_shape(const ConvCase& c) {
  const int64_t oh =
      (c.x[2] + c.pads[0] + c.pads[2] - c.dilations[0] * (c.w[2] - 1) - 1) / c.strides[0] + 1;
  const int64_t ow =
      (c.x[3] + c.pads[1] + c.pads[3] - c.dilations[1] * (c.w[3] - 1) - 1) / c.strides[1] + 1;
  return {c.x[0], c.w[0], oh, ow};
}

std::vector<double> conv_ref(const ConvCase& c, const std::vector<double>& x,
                             const std::vector<double>& w) {
  const Shape y = y_shape(c);
  const int64_t cg = c.x[1] / c.group, mg = c.w[0] / c.group, h = c.x[2], wd = c.x[3];
  std::vector<double> out(numel(y), 0.0);
  for (int64_t b = 0; b < y[0]; ++b)
    for (int64_t m = 0; m < y[1]; ++m)
      for (int64_t oy = 0; oy < y[2]; ++oy)
        for (int64_t ox = 0; ox < y[3]; ++ox) {
          double s = 0;
          const int64_t g = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < c.w[2]; ++i)
              for (int64_t j = 0; j < c.w[3]; ++j) {
                const int64_t iy = oy * c.strides[0] - c.pads[0] + i * c.dilations[0];
                const int64_t ix = ox * c.strides[1] - c.pads[1] + j * c.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += x[((b * c.x[1] + g * cg + ci) * h + iy) * wd + ix] *
                     w[((m * cg + ci) * c.w[2] + i) * c.w[3] + j];
              }
          out[((b * y[1] + m) * y[2] + oy) * y[3] + ox] = s;
        }
  return out;
}

Attrs conv_attrs(const ConvCase& c) {
  Attrs a;
  a.set_ints("strides", c.strides);
  a.set_ints("pads", c.pads);
  a.set_ints("dilations", c.dilations);
  a.set_int("group", c.group);
  return a;
}

void check_conv_grads(const ConvCase& c) {
  std::mt19937 rng(31);
  const Shape y = y_shape(c);
  const auto x = testing::random_floats(numel(c.x), rng);
  const auto w = testing::random_floats(numel(c.w), rng);
  const auto r = testing::random_floats(numel(y), rng);
  const auto xd = testing::to_double(x), wd = testing::to_double(w), rd = testing::to_double(r);
  INFO("X " << shape_str(c.x) << " W " << shape_str(c.w) << " group " << c.group);
  const testing::DoubleFn f_x = [&](const std::vector<double>& in) { return conv_ref(c, in, wd); };
  testing::check_grad(testing::run_f32("conv_grad_data", conv_attrs(c), {y, c.w}, {r, w}, c.x),
                      testing::numeric_grad(f_x, xd, rd));
  const testing::DoubleFn f_w = [&](const std::vector<double>& in) { return conv_ref(c, xd, in); };
  testing::check_grad(testing::run_f32("conv_grad_weight", conv_attrs(c), {y, c.x}, {r, x}, c.w),
                      testing::numeric_grad(f_w, wd, rd));
}

TEST_CASE("conv_grad: padded 3x3 matches finite differences", "[kernels]") {
  check_conv_grads({{2, 3, 7, 7}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1});
}

TEST_CASE("conv_grad: strides, asymmetric pads, dilations and groups", "[kernels]") {
  check_conv_grads({{1, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 2});
  check_conv_grads({{2, 2, 8, 9}, {3, 2, 2, 3}, {3, 2}, {0, 2, 1, 0}, {2, 1}, 1});
}

TEST_CASE("conv_grad: depthwise and 1x1 convs", "[kernels]") {
  check_conv_grads({{2, 3, 6, 6}, {3, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 3});
  check_conv_grads({{2, 4, 5, 5}, {6, 4, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1});  // no im2col
  check_conv_grads({{1, 4, 5, 5}, {4, 2, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2});
}

// From 16 input channels the gradients run through oneDNN's primitives (conv_dnnl.cpp): the
// same checks, on the forms resnets have (3x3 padded, strided 1x1 shortcut, a strided 3x3 whose
// last input row no window reads) and odd ones (dilation, asymmetric pads).
TEST_CASE("conv_grad: 16 and more input channels (oneDNN) match finite differences", "[kernels]") {
  check_conv_grads({{2, 16, 6, 6}, {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1});
  check_conv_grads({{1, 16, 6, 6}, {24, 16, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1});
  check_conv_grads({{1, 17, 7, 6}, {5, 17, 3, 3}, {2, 2}, {1, 1, 0, 0}, {1, 1}, 1});
  check_conv_grads({{1, 16, 7, 7}, {3, 16, 3, 2}, {1, 2}, {0, 2, 1, 0}, {2, 1}, 1});
}

// oneDNN's conv_grad_weight works through a large batch in chunks (its copies of dY and X take
// at most 1 MiB per chunk) and sums their dW: against the sum over the whole batch, in double.
TEST_CASE("conv_grad_weight: a batch too large for one chunk sums its chunks' gradients", "[kernels]") {
  for (const ConvCase& c : {ConvCase{{6, 16, 40, 40}, {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},     // 2 chunks of 3
                            ConvCase{{3, 16, 128, 128}, {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1}}) {  // 3 of 1
    std::mt19937 rng(5);
    const Shape y = y_shape(c);
    const auto x = testing::random_floats(numel(c.x), rng);
    const auto dy = testing::random_floats(numel(y), rng);
    std::vector<double> want(size_t(numel(c.w)), 0.0);
    for (int64_t b = 0; b < c.x[0]; ++b)
      for (int64_t m = 0; m < c.w[0]; ++m)
        for (int64_t ci = 0; ci < c.w[1]; ++ci)
          for (int64_t i = 0; i < c.w[2]; ++i)
            for (int64_t j = 0; j < c.w[3]; ++j) {
              double s = 0;
              for (int64_t oy = 0; oy < y[2]; ++oy)
                for (int64_t ox = 0; ox < y[3]; ++ox) {
                  const int64_t iy = oy - c.pads[0] + i, ix = ox - c.pads[1] + j;
                  if (iy < 0 || iy >= c.x[2] || ix < 0 || ix >= c.x[3]) continue;
                  s += double(dy[size_t(((b * y[1] + m) * y[2] + oy) * y[3] + ox)]) *
                       double(x[size_t(((b * c.x[1] + ci) * c.x[2] + iy) * c.x[3] + ix)]);
                }
              want[size_t(((m * c.w[1] + ci) * c.w[2] + i) * c.w[3] + j)] += s;
            }
    const auto got = testing::run_f32("conv_grad_weight", conv_attrs(c), {y, c.x}, {dy, x}, c.w);
    INFO("X " << shape_str(c.x));
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) CHECK(std::abs(double(got[k]) - want[k]) <= 1e-3 * (1.0 + std::abs(want[k])));
  }
}

TEST_CASE("conv_grad_data: input rows no window reads get zero", "[kernels]") {
  // 8 rows, 3x3 kernel, stride 2, no padding: 3 output rows read rows 0..6; row 7 is unread.
  const ConvCase c{{1, 2, 8, 8}, {2, 2, 3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1};
  check_conv_grads(c);
  std::mt19937 rng(2);
  const Shape y = y_shape(c);
  const auto dx = testing::run_f32("conv_grad_data", conv_attrs(c), {y, c.w},
                                   {testing::random_floats(numel(y), rng),
                                    testing::random_floats(numel(c.w), rng)},
                                   c.x);
  for (int64_t ch = 0; ch < 2; ++ch)
    for (int64_t col = 0; col < 8; ++col) CHECK(dx[(ch * 8 + 7) * 8 + col] == 0.0f);
}

TEST_CASE("conv_grad: bad configs throw of::Error", "[kernels]") {
  Attrs none;
  // conv_grad_data: dy [N,M,OH,OW], w -> dx
  testing::check_rejects("conv_grad_data", none, {{1, 4, 5, 5}, {4, 3, 3, 3}}, {{1, 3, 8, 8}});
  testing::check_rejects("conv_grad_data", none, {{1, 4, 5, 5}, {4, 2, 3, 3}}, {{1, 3, 7, 7}});
  testing::check_rejects("conv_grad_data", none, {{1, 4, 5, 5}}, {{1, 3, 7, 7}});
  testing::check_rejects("conv_grad_data", none, {{1, 4, 5}, {4, 3, 3, 3}}, {{1, 3, 7}});
  // conv_grad_weight: dy, x -> dw
  testing::check_rejects("conv_grad_weight", none, {{1, 4, 5, 5}, {1, 3, 7, 7}}, {{4, 3, 2, 2}});
  testing::check_rejects("conv_grad_weight", none, {{2, 4, 5, 5}, {1, 3, 7, 7}}, {{4, 3, 3, 3}});
  Attrs g2;
  g2.set_int("group", 2);
  testing::check_rejects("conv_grad_weight", g2, {{1, 4, 5, 5}, {1, 3, 7, 7}}, {{4, 3, 3, 3}});
  Attrs bad_stride;
  bad_stride.set_ints("strides", {0, 1});
  testing::check_rejects("conv_grad_weight", bad_stride, {{1, 4, 5, 5}, {1, 3, 7, 7}},
                         {{4, 3, 3, 3}});
}

}  // namespace
}  // namespace of::kernels
