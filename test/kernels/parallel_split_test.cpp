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

TEST_CASE("parallel split: rows, elements, planes, transposes and updates on two kernel threads give the one-thread bits", "[kernels]") {
  constexpr int64_t rows = 300, n = 130;  // 39000 elements: past kParallelElements
  std::mt19937 rng(71);
  const auto x = testing::random_floats(rows * n, rng, -4, 4);
  const auto dy = testing::random_floats(rows * n, rng);
  const auto scale = testing::random_floats(n, rng, 0.5f, 2), bias = testing::random_floats(n, rng);
  Attrs last;
  last.set_int("axis", 1);
  check_same_bits("layer_norm and its gradients", [&] {
    return std::vector<std::vector<float>>{
        testing::run_f32("layer_norm", last, {{rows, n}, {n}, {n}}, {x, scale, bias}, {rows, n}),
        testing::run_f32("layer_norm_grad", last, {{rows, n}, {rows, n}, {n}}, {dy, x, scale}, {rows, n}),
        testing::run_f32("layer_norm_scale_grad", last, {{rows, n}, {rows, n}}, {dy, x}, {n})};
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
  const auto b390 = testing::random_floats(390, rng), b300 = testing::random_floats(300, rng);
  std::vector<uint8_t> mask(100 * 130);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = uint8_t((i * 7) % 3 == 0);
  check_same_bits("where and expand, broadcast", [&] {
    std::vector<float> picked(size_t(rows * n)), spread(size_t(rows * n));
    const float zero = 0;
    testing::run_kernel("where", Attrs{}, {{{100, 130}, DType::bool_}, {{3, 100, 130}, DType::f32}, {{}, DType::f32}},
                        {{{3, 100, 130}, DType::f32}}, {mask.data(), x.data(), &zero}, {picked.data()});
    testing::run_kernel("expand", Attrs{}, {{{3, 1, 130}, DType::f32}}, {{{3, 100, 130}, DType::f32}}, {b390.data()}, {spread.data()});
    return std::vector<std::vector<float>>{picked, spread};
  });
  check_same_bits("transpose, rows and tiled matrices", [&] {
    Attrs heads, matrices;
    heads.set_ints("perm", {0, 2, 1, 3});  // attention's [B,T,H,D] -> [B,H,T,D]: rows of D
    matrices.set_ints("perm", {0, 2, 1});  // K^T per batch: tiles
    return std::vector<std::vector<float>>{testing::run_f32("transpose", heads, {{3, 50, 4, 65}}, {x}, {3, 4, 50, 65}),
                                           testing::run_f32("transpose", matrices, {{6, 50, 130}}, {x}, {6, 130, 50})};
  });
  const int64_t e = rows * n;
  const std::vector<float> v0 = testing::random_floats(e, rng), m0 = testing::random_floats(e, rng, 0, 1);
  check_same_bits("sgd (momentum, nesterov) and adam (Adam, AdamW) updates", [&] {
    const float lr = 0.01f, step = 3;
    std::vector<std::vector<float>> outs;
    for (int nesterov = 0; nesterov < 2; ++nesterov) {
      Attrs a;
      a.set_float("momentum", 0.9f);
      a.set_int("nesterov", nesterov);
      std::vector<float> p(static_cast<size_t>(e)), v(static_cast<size_t>(e));
      testing::run_kernel("sgd_update", a, {{{e}, DType::f32}, {{e}, DType::f32}, {{e}, DType::f32}, {{}, DType::f32}, {{}, DType::f32}},
                          {{{e}, DType::f32}, {{e}, DType::f32}}, {x.data(), dy.data(), v0.data(), &lr, &step}, {p.data(), v.data()});
      outs.push_back(p);
      outs.push_back(v);
    }
    for (int decoupled = 0; decoupled < 2; ++decoupled) {
      Attrs a;
      a.set_float("weight_decay", 0.1f);
      a.set_int("decoupled", decoupled);
      std::vector<float> p(static_cast<size_t>(e)), m(static_cast<size_t>(e)), v(static_cast<size_t>(e));
      const TensorDesc t{{e}, DType::f32}, s{{}, DType::f32};
      testing::run_kernel("adam_update", a, {t, t, t, t, s, s}, {t, t, t}, {x.data(), dy.data(), v0.data(), m0.data(), &lr, &step},
                          {p.data(), m.data(), v.data()});
      outs.push_back(p);
      outs.push_back(m);
      outs.push_back(v);
    }
    return outs;
  });
  check_same_bits("relu, its gradient, add, and broadcasting add, mul and sub", [&] {
    return std::vector<std::vector<float>>{testing::run_f32("relu", Attrs{}, {{rows, n}}, {x}, {rows, n}),
                                           testing::run_f32("relu_grad", Attrs{}, {{rows, n}, {rows, n}}, {dy, x}, {rows, n}),
                                           testing::run_f32("add", Attrs{}, {{rows, n}, {rows, n}}, {x, dy}, {rows, n}),
                                           testing::run_f32("add", Attrs{}, {{rows, n}, {n}}, {x, bias}, {rows, n}),
                                           testing::run_f32("mul", Attrs{}, {{3, 100, 1, 130}, {3, 1, 1, 130}}, {x, b390}, {3, 100, 1, 130}),
                                           testing::run_f32("sub", Attrs{}, {{3, 1, 130}, {3, 100, 1}}, {b390, b300}, {3, 100, 130})};
  });
}

}  // namespace of::kernels
