// SPDX-License-Identifier: Apache-2.0
// conv_grad_data's bias (ConvTranspose's forward pass): the result without it plus the bias of
// each channel, bit for bit, with few channels (im2col) and 16 or more (oneDNN's primitive), 2-D
// and 1-D; a bias of the wrong size refused.
#include <cstring>

#include "grad_check.h"

namespace of::kernels {
namespace {

void check_bias(const Shape& dy, const Shape& w, const Shape& dx, const Attrs& attrs) {
  INFO("dY " << shape_str(dy) << " W " << shape_str(w) << " dX " << shape_str(dx));
  std::mt19937 rng(9);
  const auto dyv = testing::random_floats(numel(dy), rng), wv = testing::random_floats(numel(w), rng);
  const auto bias = testing::random_floats(dx[1], rng);
  const auto plain = testing::run_f32("conv_grad_data", attrs, {dy, w}, {dyv, wv}, dx);
  const auto with_bias = testing::run_f32("conv_grad_data", attrs, {dy, w, {dx[1]}}, {dyv, wv, bias}, dx);
  const int64_t plane = numel(dx) / (dx[0] * dx[1]);
  std::vector<float> want = plain;
  for (size_t i = 0; i < want.size(); ++i) want[i] += bias[size_t(int64_t(i) / plane % dx[1])];
  CHECK(std::memcmp(with_bias.data(), want.data(), want.size() * sizeof(float)) == 0);
}

TEST_CASE("conv_grad_data: a bias (ConvTranspose) adds to each channel of dX after the product", "[kernels]") {
  Attrs a;
  a.set_ints("strides", {2, 2});
  a.set_ints("pads", {1, 1, 1, 1});
  // ConvTranspose2d(C=4 -> M=3, k 3, stride 2, padding 1, output_padding 1) of [2,4,5,5]: the conv
  // it inverts reads X [2,3,10,10] with W [4,3,3,3].
  check_bias({2, 4, 5, 5}, {4, 3, 3, 3}, {2, 3, 10, 10}, a);
  check_bias({2, 32, 5, 5}, {32, 16, 3, 3}, {2, 16, 10, 10}, a);  // oneDNN
  Attrs one_d;
  one_d.set_ints("strides", {1, 2});
  one_d.set_ints("pads", {0, 0, 0, 0});
  check_bias({2, 4, 7}, {4, 3, 3}, {2, 3, 15}, one_d);
  testing::check_rejects("conv_grad_data", a, {{2, 4, 5, 5}, {4, 3, 3, 3}, {4}}, {{2, 3, 10, 10}});
}

}  // namespace
}  // namespace of::kernels
