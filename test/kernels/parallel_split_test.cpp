// SPDX-License-Identifier: Apache-2.0
// Kernels that split their work between kernel threads (kernels/cpu/parallel_split.h) give the
// one-thread results bit for bit: each on a tensor large enough to split, run on one thread and
// then on two.
#include <cstring>

#include <functional>

#include "grad_check.h"
#include "kernels/registry.h"

namespace of::kernels {
namespace {

// Runs `run` on one kernel thread, then on two, and compares every output's bytes.
void check_same_bits(const char* what, const std::function<std::vector<std::vector<float>>()>& run) {
  set_kernel_threads(1);
  const std::vector<std::vector<float>> one = run();
  set_kernel_threads(2);
  const std::vector<std::vector<float>> two = run();
  set_kernel_threads(1);
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    INFO(what << ", output " << i);
    REQUIRE(one[i].size() == two[i].size());
    CHECK(std::memcmp(one[i].data(), two[i].data(), one[i].size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("parallel split: rows, elements and planes on two kernel threads give the one-thread bits", "[kernels]") {
  constexpr int64_t rows = 300, n = 130;  // 39000 elements: past kParallelElements
  std::mt19937 rng(71);
  const auto x = testing::random_floats(rows * n, rng, -4, 4);
  const auto dy = testing::random_floats(rows * n, rng);
  const auto scale = testing::random_floats(n, rng, 0.5f, 2), bias = testing::random_floats(n, rng);
  Attrs last;
  last.set_int("axis", 1);
  check_same_bits("layer_norm and its gradient", [&] {
    return std::vector<std::vector<float>>{
        testing::run_f32("layer_norm", last, {{rows, n}, {n}, {n}}, {x, scale, bias}, {rows, n}),
        testing::run_f32("layer_norm_grad", last, {{rows, n}, {rows, n}, {n}}, {dy, x, scale}, {rows, n})};
  });
  check_same_bits("softmax and its gradient", [&] {
    const std::vector<float> y = testing::run_f32("softmax", last, {{rows, n}}, {x}, {rows, n});
    return std::vector<std::vector<float>>{y, testing::run_f32("softmax_grad", last, {{rows, n}, {rows, n}}, {dy, y}, {rows, n})};
  });
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[size_t(r)] = r % 17 == 0 ? -100 : (r * 7) % n;  // some not counted
  check_same_bits("softmax_cross_entropy and its gradient", [&] {
    std::vector<float> loss(1), prob(size_t(rows * n)), dx(size_t(rows * n));
    testing::run_kernel("softmax_cross_entropy", Attrs{}, {{{rows, n}, DType::f32}, {{rows}, DType::i64}},
                        {{{}, DType::f32}, {{rows, n}, DType::f32}}, {x.data(), labels.data()}, {loss.data(), prob.data()});
    const float dloss = 0.75f;
    testing::run_kernel("softmax_cross_entropy_grad", Attrs{}, {{{}, DType::f32}, {{rows, n}, DType::f32}, {{rows}, DType::i64}},
                        {{{rows, n}, DType::f32}}, {&dloss, prob.data(), labels.data()}, {dx.data()});
    return std::vector<std::vector<float>>{loss, prob, dx};
  });
  check_same_bits("relu, its gradient and add", [&] {
    return std::vector<std::vector<float>>{testing::run_f32("relu", Attrs{}, {{rows, n}}, {x}, {rows, n}),
                                           testing::run_f32("relu_grad", Attrs{}, {{rows, n}, {rows, n}}, {dy, x}, {rows, n}),
                                           testing::run_f32("add", Attrs{}, {{rows, n}, {rows, n}}, {x, dy}, {rows, n})};
  });
}

}  // namespace of::kernels
