// SPDX-License-Identifier: Apache-2.0
// 1-D windows (nn.Conv1d, MaxPool1d, AvgPool1d on [N,C,L]) run as the 2-D kernels of height 1:
// every windowed kernel and its gradients, given 1-D shapes and the 2-D attributes the compiler
// lowers them with, write the bits they write for [N,C,1,L]; with few channels (im2col) and with
// 16 or more (oneDNN's primitive).
#include <cstring>

#include "grad_check.h"

namespace of::kernels {
namespace {

Shape lift(const Shape& s) { return {s[0], s[1], 1, s[2]}; }

// Runs `kernel` once on the 1-D shapes and once on their height-1 lifts; the outputs' bits agree.
void check_as_2d(const std::string& kernel, const Attrs& attrs, const std::vector<Shape>& in, const Shape& out, uint32_t seed) {
  INFO(kernel << " " << shape_str(in[0]) << " -> " << shape_str(out));
  std::mt19937 rng(seed);
  std::vector<std::vector<float>> data;
  std::vector<Shape> lifted;
  for (const Shape& s : in) {
    data.push_back(testing::random_floats(numel(s), rng, -1, 1));
    lifted.push_back(s.size() == 3 ? lift(s) : s);
  }
  const auto one_d = testing::run_f32(kernel, attrs, in, data, out);
  const auto two_d = testing::run_f32(kernel, attrs, lifted, data, out.size() == 3 ? lift(out) : out);
  REQUIRE(one_d.size() == two_d.size());
  CHECK(std::memcmp(one_d.data(), two_d.data(), one_d.size() * sizeof(float)) == 0);
}

Attrs window(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilations) {
  Attrs a;
  a.set_ints("strides", std::move(strides));
  a.set_ints("pads", std::move(pads));
  a.set_ints("dilations", std::move(dilations));
  return a;
}

TEST_CASE("conv and its gradients: 1-D shapes give the height-1 2-D results, bit for bit", "[kernels]") {
  for (int64_t c : {3, 16}) {
    const Attrs a = window({1, 2}, {0, 1, 0, 2}, {1, 1});
    const Shape x{2, c, 11}, w{5, c, 3}, y{2, 5, 6};  // (11 + 3 - 3) / 2 + 1
    check_as_2d("conv", a, {x, w, {5}}, y, 1);
    check_as_2d("conv_grad_data", a, {y, w}, x, 2);
    check_as_2d("conv_grad_weight", a, {y, x}, w, 3);
  }
  const Attrs dilated = window({1, 1}, {0, 2, 0, 2}, {1, 2});
  check_as_2d("conv", dilated, {{1, 4, 9}, {4, 4, 3}}, {1, 4, 9}, 4);
}

TEST_CASE("pooling and its gradients: 1-D shapes give the height-1 2-D results, bit for bit", "[kernels]") {
  Attrs m = window({1, 2}, {0, 1, 0, 1}, {1, 1});
  m.set_ints("kernel_shape", {1, 3});
  const Shape x{2, 3, 9}, y{2, 3, 5};
  check_as_2d("max_pool", m, {x}, y, 5);
  check_as_2d("max_pool_grad", m, {y, x}, x, 6);
  Attrs a;
  a.set_ints("kernel_shape", {1, 2});
  a.set_ints("strides", {1, 2});
  a.set_ints("pads", {0, 0, 0, 0});
  check_as_2d("average_pool", a, {{2, 3, 8}}, {2, 3, 4}, 7);
  check_as_2d("average_pool_grad", a, {{2, 3, 4}}, {2, 3, 8}, 8);
}

TEST_CASE("windowed kernels refuse a 1-D input with a 2-D output, naming the node", "[kernels]") {
  Attrs m = window({1, 1}, {0, 0, 0, 0}, {1, 1});
  m.set_ints("kernel_shape", {1, 2});
  testing::check_rejects("max_pool", m, {{2, 3, 8}}, {{2, 3, 1, 7}});
  testing::check_rejects("conv", window({1, 1}, {0, 0, 0, 0}, {1, 1}), {{2, 3, 8}, {4, 3, 1, 2}}, {{2, 4, 1, 7}});
}

}  // namespace
}  // namespace of::kernels
