// SPDX-License-Identifier: Apache-2.0
// topk and topk_grad: torch.topk's values and positions along any axis, largest or smallest,
// equal values in position order, a NaN as the largest; the gradient back at the positions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/registry.h"

namespace of::kernels {
namespace {

struct TopKOut {
  std::vector<float> values;
  std::vector<int64_t> indices;
};

Attrs topk_attrs(int64_t axis, int64_t k, bool largest) {
  Attrs a;
  a.set_int("axis", axis);
  a.set_int("k", k);
  a.set_int("largest", largest ? 1 : 0);
  return a;
}

TopKOut run_topk(const Shape& x, const std::vector<float>& data, int64_t axis, int64_t k, bool largest) {
  Shape y = x;
  y[size_t(axis)] = k;
  auto kernel = make_kernel("topk", DeviceKind::cpu, DType::f32,
                            KernelConfig{topk_attrs(axis, k, largest), {{x, DType::f32}}, {{y, DType::f32}, {y, DType::i64}}, "test_node"});
  TopKOut o{std::vector<float>(size_t(numel(y)), -7), std::vector<int64_t>(size_t(numel(y)), -7)};
  const void* in[] = {data.data()};
  void* outs[] = {o.values.data(), o.indices.data()};
  kernel->run({}, in, outs);
  return o;
}

TEST_CASE("topk: the k largest or smallest in order with their positions, ties in position order, NaN largest", "[kernels]") {
  // [2, 5]: ties at 3 in row 0, a NaN in row 1.
  const std::vector<float> x = {1, 3, -2, 3, 0, 4, NAN, -1, 2, 8};
  const TopKOut top = run_topk({2, 5}, x, 1, 3, true);
  CHECK(top.indices == std::vector<int64_t>{1, 3, 0, 1, 4, 0});
  CHECK(top.values[0] == 3);
  CHECK(top.values[2] == 1);
  CHECK(std::isnan(top.values[3]));
  CHECK(top.values[4] == 8);
  const TopKOut low = run_topk({2, 5}, x, 1, 2, false);
  CHECK(low.indices == std::vector<int64_t>{2, 4, 2, 3});  // row 1: -1 then 2 (the NaN last)
  CHECK(low.values == std::vector<float>{-2, 0, -1, 2});
  // Along axis 0 of [2, 5]: per column, the larger first.
  CHECK(run_topk({2, 5}, x, 0, 1, true).indices == std::vector<int64_t>{1, 1, 1, 0, 1});
}

TEST_CASE("topk: a whole sorted axis (torch.sort) along a middle axis, against std::sort", "[kernels]") {
  std::mt19937 rng(71);
  std::uniform_real_distribution<float> u(-3, 3);
  const Shape x{3, 7, 4};
  std::vector<float> data(size_t(numel(x)));
  for (float& v : data) v = u(rng);
  const TopKOut s = run_topk(x, data, 1, 7, true);
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t in = 0; in < 4; ++in) {
      std::vector<int64_t> order(7);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return data[size_t(o * 28 + a * 4 + in)] > data[size_t(o * 28 + b * 4 + in)]; });
      for (int64_t j = 0; j < 7; ++j) {
        INFO("row " << o << "," << in << " rank " << j);
        CHECK(s.indices[size_t(o * 28 + j * 4 + in)] == order[size_t(j)]);
        CHECK(s.values[size_t(o * 28 + j * 4 + in)] == data[size_t(o * 28 + order[size_t(j)] * 4 + in)]);
      }
    }
}

TEST_CASE("topk_grad: dY back at the positions, zeros elsewhere", "[kernels]") {
  const Shape x{2, 5}, y{2, 2};
  auto grad = make_kernel("topk_grad", DeviceKind::cpu, DType::f32,
                          KernelConfig{topk_attrs(1, 2, true), {{y, DType::f32}, {y, DType::i64}}, {{x, DType::f32}}, "test_node"});
  const std::vector<float> dy = {10, 20, 30, 40};
  const std::vector<int64_t> idx = {3, 0, 1, 4};
  std::vector<float> dx(10, -7);
  const void* in[] = {dy.data(), idx.data()};
  void* out[] = {dx.data()};
  grad->run({}, in, out);
  CHECK(dx == std::vector<float>{20, 0, 0, 10, 0, 0, 30, 0, 0, 40});
}

TEST_CASE("topk: bad configs throw naming the node", "[kernels]") {
  const auto rejects = [](const Attrs& a, std::vector<TensorDesc> in, std::vector<TensorDesc> out, const char* kernel = "topk") {
    CHECK_THROWS_WITH(make_kernel(kernel, DeviceKind::cpu, DType::f32, KernelConfig{a, std::move(in), std::move(out), "test_node"}),
                      Catch::Contains("test_node"));
  };
  rejects(topk_attrs(1, 6, true), {{{2, 5}, DType::f32}}, {{{2, 6}, DType::f32}, {{2, 6}, DType::i64}});  // k > n
  rejects(topk_attrs(1, 0, true), {{{2, 5}, DType::f32}}, {{{2, 0}, DType::f32}, {{2, 0}, DType::i64}});  // k < 1
  rejects(topk_attrs(2, 1, true), {{{2, 5}, DType::f32}}, {{{2, 5}, DType::f32}, {{2, 5}, DType::i64}});  // axis
  rejects(topk_attrs(1, 2, true), {{{2, 5}, DType::f32}}, {{{2, 2}, DType::f32}, {{2, 2}, DType::f32}});  // f32 positions
  rejects(topk_attrs(1, 2, true), {{{2, 3}, DType::f32}, {{2, 2}, DType::i64}}, {{{2, 5}, DType::f32}}, "topk_grad");  // dy shape
}

}  // namespace
}  // namespace of::kernels
