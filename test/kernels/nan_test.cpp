// SPDX-License-Identifier: Apache-2.0
// NaN in, NaN out, as in PyTorch: torch.relu(nan), torch.clamp(nan), hardsigmoid, hardswish,
// leaky_relu and a max-pooling window holding a NaN are all NaN (a comparison-based kernel that
// maps NaN to 0 or skips it would hide a diverged run); relu's gradient follows
// threshold_backward and max_pool's gradient goes to the NaN, as PyTorch's do.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

const float nan = std::numeric_limits<float>::quiet_NaN();

Attrs floats(std::initializer_list<std::pair<const char*, float>> values) {
  Attrs a;
  for (const auto& [name, v] : values) a.set_float(name, v);
  return a;
}

// y = kernel([nan, -2, 0.5]): y[0] is NaN and the finite values are what they were before.
std::vector<float> run_unary(const std::string& name, const Attrs& attrs = {}) {
  const std::vector<float> y = testing::run_f32(name, attrs, {{3}}, {{nan, -2.0f, 0.5f}}, {3});
  INFO(name);
  CHECK(std::isnan(y[0]));
  CHECK_FALSE(std::isnan(y[1]));
  CHECK_FALSE(std::isnan(y[2]));
  return y;
}

Attrs pool_attrs(std::vector<int64_t> kernel) {
  Attrs a;
  a.set_ints("kernel_shape", kernel);
  a.set_ints("strides", {1, 1});
  a.set_ints("pads", {0, 0, 0, 0});
  a.set_ints("dilations", {1, 1});
  return a;
}

}  // namespace

TEST_CASE("nan: relu of NaN is NaN", "[kernels]") {
  const std::vector<float> y = run_unary("relu");
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == 0.5f);
}

TEST_CASE("nan: clip leaky_relu hardsigmoid and hardswish keep NaN", "[kernels]") {
  CHECK(run_unary("clip", floats({{"min", 0.0f}, {"max", 6.0f}}))[1] == 0.0f);  // relu6
  CHECK(run_unary("leaky_relu", floats({{"alpha", 0.1f}}))[1] == Approx(-0.2f));
  CHECK(run_unary("hard_sigmoid", floats({{"alpha", 0.2f}, {"beta", 0.5f}}))[1] == Approx(0.1f));
  CHECK(run_unary("hard_swish")[1] == Approx(-2.0f / 6.0f));
  run_unary("sigmoid");
  run_unary("tanh");
}

TEST_CASE("nan: relu_grad follows torch threshold_backward", "[kernels]") {
  // dx = (y <= 0) ? 0 : dy: a NaN output passes dy on; a NaN dy where y > 0 stays NaN.
  const std::vector<float> dx = testing::run_f32("relu_grad", {}, {{4}, {4}}, {{1.0f, 1.0f, nan, nan}, {nan, -1.0f, 2.0f, -1.0f}}, {4});
  CHECK(dx[0] == 1.0f);
  CHECK(dx[1] == 0.0f);
  CHECK(std::isnan(dx[2]));
  CHECK(dx[3] == 0.0f);
}

TEST_CASE("nan: max_pool of a window holding NaN is NaN", "[kernels]") {
  // 2x2 windows over 4x4 (the fast path) and 3x3 windows (the general one); NaN at (1, 1).
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  x[5] = nan;
  Attrs two = pool_attrs({2, 2});
  two.set_ints("strides", {2, 2});
  const std::vector<float> y2 = testing::run_f32("max_pool", two, {{1, 1, 4, 4}}, {x}, {1, 1, 2, 2});
  CHECK(std::isnan(y2[0]));
  CHECK(y2[1] == 7.0f);
  CHECK(y2[2] == 13.0f);
  CHECK(y2[3] == 15.0f);
  const std::vector<float> y3 = testing::run_f32("max_pool", pool_attrs({3, 3}), {{1, 1, 4, 4}}, {x}, {1, 1, 2, 2});
  CHECK(std::isnan(y3[0]));
  CHECK(std::isnan(y3[1]));
  CHECK(std::isnan(y3[2]));
  CHECK(std::isnan(y3[3]));
  // NaN first in the window too (std::max(NaN, v) and std::max(v, NaN) differ).
  x[5] = 5.0f;
  x[0] = nan;
  const std::vector<float> y0 = testing::run_f32("max_pool", two, {{1, 1, 4, 4}}, {x}, {1, 1, 2, 2});
  CHECK(std::isnan(y0[0]));
  CHECK(y0[1] == 7.0f);
}

TEST_CASE("nan: max_pool_grad sends the gradient to the NaN", "[kernels]") {
  // One 2x2 window [1, nan, 3, 2]: PyTorch picks the NaN (val > max || isnan(val)).
  const std::vector<float> dx =
      testing::run_f32("max_pool_grad", pool_attrs({2, 2}), {{1, 1, 1, 1}, {1, 1, 2, 2}}, {{1.0f}, {1.0f, nan, 3.0f, 2.0f}}, {1, 1, 2, 2});
  CHECK(dx == std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f});
}

TEST_CASE("nan: a fused relu keeps NaN in gemm packed and unpacked", "[kernels]") {
  // y = relu(a b^T + c) with a NaN in a's first row: that row is NaN, the other is not.
  const std::vector<float> a = {nan, 1.0f, 1.0f, 1.0f}, b = {1.0f, 1.0f, -1.0f, -1.0f}, c = {0.0f, 0.0f};
  Attrs attrs;
  attrs.set_int("trans_b", 1);
  attrs.set_str("activation", "relu");
  for (bool packed : {false, true}) {
    KernelConfig cfg{attrs, testing::f32_descs({{2, 2}, {2, 2}, {2}}), testing::f32_descs({{2, 2}}), "test_node"};
    if (packed) cfg.constants = {nullptr, b.data(), nullptr};
    auto kernel = make_kernel("gemm", DeviceKind::cpu, DType::f32, cfg);
    std::vector<float> y(4);
    const void* ins[] = {a.data(), b.data(), c.data()};
    void* outs[] = {y.data()};
    kernel->run({}, ins, outs);
    INFO("packed " << packed);
    CHECK(std::isnan(y[0]));
    CHECK(std::isnan(y[1]));
    CHECK(y[2] == 2.0f);
    CHECK(y[3] == 0.0f);
  }
}

}  // namespace of::kernels
