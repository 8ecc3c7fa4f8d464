// SPDX-License-Identifier: Apache-2.0
// gather_elements and scatter_elements (kernels/elements_space.h) against a loop over torch's
// definition: every mode, negative and int32 indices, an index outside the axis (read as 0,
// written nowhere), indices narrower than the data, and each kernel the other's adjoint.
#include <cstring>
#include <numeric>
#include <random>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

std::vector<float> run(const std::string& name, Attrs attrs, const std::vector<TensorDesc>& in, const std::vector<const void*>& data,
                       TensorDesc out) {
  auto kernel = make_kernel(name, DeviceKind::cpu, DType::f32, KernelConfig{std::move(attrs), in, {out}, "test_node"});
  std::vector<float> y(size_t(numel(out.shape)), -7.0f);
  void* outs[] = {y.data()};
  kernel->run({}, data.data(), outs);
  return y;
}

Attrs attrs(int64_t axis, int64_t mode = -1) {
  Attrs a;
  a.set_int("axis", axis);
  if (mode >= 0) a.set_int("mode", mode);
  return a;
}

// data [3, 4], indices [2, 3] along axis 1 (narrower than data on both axes): row r's element j
// addresses data[r, idx[r][j]]. Row 1 repeats position 2; -1 is position 3; 9 is outside.
const std::vector<float> kData = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
const std::vector<int64_t> kIdx = {0, -1, 9, 2, 2, 1};
const std::vector<float> kUpd = {0.5f, 0.25f, 8.0f, 1.0f, 2.0f, 4.0f};
const TensorDesc kDataD{{3, 4}, DType::f32}, kIdxD{{2, 3}, DType::i64}, kUpdD{{2, 3}, DType::f32};

TEST_CASE("gather_elements: picks along the axis, an index outside it reads 0, int32 indices alike", "[kernels]") {
  const std::vector<float> y = run("gather_elements", attrs(1), {kDataD, kIdxD}, {kData.data(), kIdx.data()}, kUpdD);
  CHECK(y == std::vector<float>{0, 3, 0, 12, 12, 11});
  const std::vector<int32_t> narrow(kIdx.begin(), kIdx.end());
  CHECK(run("gather_elements", attrs(1), {kDataD, {{2, 3}, DType::i32}}, {kData.data(), narrow.data()}, kUpdD) == y);
  const std::vector<int64_t> rows = {2, 0, 1, 1, 2, 0};  // axis 0: [2, 3] into [3, 4]
  CHECK(run("gather_elements", attrs(0), {kDataD, kIdxD}, {kData.data(), rows.data()}, kUpdD) == std::vector<float>{20, 1, 12, 10, 21, 2});
}

TEST_CASE("scatter_elements: set (last write wins), add, add to zeros and clear, as torch's scatter_ and scatter_add_", "[kernels]") {
  const std::vector<float> set = run("scatter_elements", attrs(1, 0), {kDataD, kIdxD, kUpdD}, {kData.data(), kIdx.data(), kUpd.data()}, kDataD);
  CHECK(set == std::vector<float>{0.5f, 1, 2, 0.25f, 10, 4, 2, 13, 20, 21, 22, 23});
  const std::vector<float> add = run("scatter_elements", attrs(1, 1), {kDataD, kIdxD, kUpdD}, {kData.data(), kIdx.data(), kUpd.data()}, kDataD);
  CHECK(add == std::vector<float>{0.5f, 1, 2, 3.25f, 10, 15, 15, 13, 20, 21, 22, 23});
  const std::vector<float> zeros = run("scatter_elements", attrs(1, 2), {kIdxD, kUpdD}, {kIdx.data(), kUpd.data()}, kDataD);
  CHECK(zeros == std::vector<float>{0.5f, 0, 0, 0.25f, 0, 4, 3, 0, 0, 0, 0, 0});
  const std::vector<float> clear = run("scatter_elements", attrs(1, 3), {kDataD, kIdxD}, {kData.data(), kIdx.data()}, kDataD);
  CHECK(clear == std::vector<float>{0, 1, 2, 0, 10, 0, 0, 13, 20, 21, 22, 23});
}

TEST_CASE("gather_elements and scatter_elements add-to-zeros are adjoint: <gather(x), dy> = <x, scatter(dy)>", "[kernels]") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int64_t> pick(-5, 4);
  const TensorDesc x_d{{4, 5, 3}, DType::f32}, i_d{{3, 7, 3}, DType::i64};
  std::vector<float> x(60), dy(63);
  std::vector<int64_t> idx(63);
  for (float& v : x) v = u(rng);
  for (float& v : dy) v = u(rng);
  for (int64_t& v : idx) v = pick(rng);
  const std::vector<float> y = run("gather_elements", attrs(1), {x_d, i_d}, {x.data(), idx.data()}, {i_d.shape, DType::f32});
  const std::vector<float> dx = run("scatter_elements", attrs(1, 2), {i_d, {i_d.shape, DType::f32}}, {idx.data(), dy.data()}, x_d);
  double lhs = 0, rhs = 0;
  for (size_t k = 0; k < y.size(); ++k) lhs += double(y[k]) * dy[k];
  for (size_t k = 0; k < x.size(); ++k) rhs += double(x[k]) * dx[k];
  CHECK(lhs == Approx(rhs).epsilon(1e-5));
}

TEST_CASE("gather_elements and scatter_elements: bad configs throw of::Error", "[kernels]") {
  auto rejects = [](const std::string& name, Attrs a, std::vector<TensorDesc> in, TensorDesc out) {
    CHECK_THROWS_AS(make_kernel(name, DeviceKind::cpu, DType::f32, KernelConfig{std::move(a), std::move(in), {out}, "n"}), Error);
  };
  rejects("gather_elements", attrs(2), {kDataD, kIdxD}, kUpdD);                                      // axis past the rank
  rejects("gather_elements", attrs(1), {kDataD, {{4, 3}, DType::i64}}, {{4, 3}, DType::f32});        // 4 rows of 3
  rejects("gather_elements", attrs(1), {kDataD, {{2, 3}, DType::f32}}, kUpdD);                       // float indices
  rejects("scatter_elements", attrs(1, 1), {kDataD, kIdxD, {{3, 2}, DType::f32}}, kDataD);          // updates' shape
  rejects("scatter_elements", attrs(1, 4), {kDataD, kIdxD, kUpdD}, kDataD);                          // no mode 4
  rejects("scatter_elements", attrs(1, 3), {kDataD, kIdxD, kUpdD}, kDataD);                          // clear takes two
}

}  // namespace
}  // namespace of::kernels
