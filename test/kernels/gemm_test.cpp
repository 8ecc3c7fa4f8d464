// SPDX-License-Identifier: Apache-2.0
// gemm against a naive double reference: transposes, alpha/beta, every broadcastable C shape.
#include <optional>

#include "kernel_test_util.h"
#include "kernels/cpu/factories.h"

namespace of::kernels {
namespace {

using testing::check_close;
using testing::random_floats;

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
  std::optional<Shape> c;  // nullopt: no C input
};

std::vector<double> reference(const GemmCase& g, const std::vector<float>& a,
                              const std::vector<float>& b, const std::vector<float>* c) {
  std::vector<double> y(g.m * g.n);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double av = g.ta ? a[p * g.m + i] : a[i * g.k + p];
        const double bv = g.tb ? b[j * g.k + p] : b[p * g.n + j];
        s += av * bv;
      }
      double cv = 0;
      if (c) {
        const Shape& cs = *g.c;
        const int64_t rows = cs.size() == 2 ? cs[0] : 1, cols = cs.empty() ? 1 : cs.back();
        cv = (*c)[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      }
      y[i * g.n + j] = g.alpha * s + g.beta * cv;
    }
  return y;
}

void check_gemm(const GemmCase& g) {
  std::mt19937 rng(42);
  const Shape a_shape = g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k};
  const Shape b_shape = g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n};
  std::vector<Shape> shapes{a_shape, b_shape};
  std::vector<std::vector<float>> data{random_floats(numel(a_shape), rng),
                                       random_floats(numel(b_shape), rng)};
  if (g.c) {
    shapes.push_back(*g.c);
    data.push_back(random_floats(numel(*g.c), rng));
  }
  Attrs attrs;
  attrs.set_int("trans_a", g.ta);
  attrs.set_int("trans_b", g.tb);
  attrs.set_float("alpha", g.alpha);
  attrs.set_float("beta", g.beta);
  const auto y = testing::run_f32("gemm", attrs, shapes, data, {g.m, g.n});
  check_close(y, reference(g, data[0], data[1], g.c ? &data[2] : nullptr));
}

TEST_CASE("gemm: all transposes with alpha and beta match naive reference", "[kernels]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a=" << ta << " trans_b=" << tb);
      check_gemm({7, 5, 9, ta, tb, 1.0f, 1.0f, Shape{7, 5}});
      check_gemm({7, 5, 9, ta, tb, 0.5f, -2.0f, Shape{5}});
      check_gemm({33, 17, 65, ta, tb, 1.5f, 0.0f, std::nullopt});
    }
}

TEST_CASE("gemm: C broadcasts from shapes N, 1xN, Mx1, MxN, 1 and rank 0", "[kernels]") {
  for (const Shape& c : {Shape{6}, Shape{1, 6}, Shape{4, 1}, Shape{4, 6}, Shape{1}, Shape{}}) {
    INFO("C " << shape_str(c));
    check_gemm({4, 6, 3, false, true, 1.0f, 0.75f, c});
  }
}

TEST_CASE("gemm: K = 0 yields beta*C", "[kernels]") {
  check_gemm({3, 4, 0, false, false, 1.0f, 2.0f, Shape{4}});
  check_gemm({3, 4, 0, false, false, 1.0f, 1.0f, std::nullopt});
}

TEST_CASE("gemm: bad configs throw of::Error", "[kernels]") {
  Attrs none;
  testing::check_rejects("gemm", none, {{3, 4}, {5, 6}}, {{3, 6}});             // inner dims
  testing::check_rejects("gemm", none, {{3, 4}, {4, 6}}, {{3, 5}});             // output shape
  testing::check_rejects("gemm", none, {{3, 4}, {4, 6}, {3, 5}}, {{3, 6}});     // C shape
  testing::check_rejects("gemm", none, {{3, 4}, {4, 6}, {2, 3, 6}}, {{3, 6}});  // C rank
  testing::check_rejects("gemm", none, {{3, 4, 1}, {4, 6}}, {{3, 6}});          // A rank
  testing::check_rejects("gemm", none, {{3, 4}}, {{3, 6}});                     // arity
  Attrs ta;
  ta.set_int("trans_a", 1);
  testing::check_rejects("gemm", ta, {{3, 4}, {4, 6}}, {{3, 6}});
  Attrs attrs;
  KernelConfig cfg{
      attrs, {{{3, 4}, DType::f32}, {{4, 6}, DType::i64}}, {{{3, 6}, DType::f32}}, "n"};
  CHECK_THROWS_AS(make_kernel("gemm", DeviceKind::cpu, DType::f32, cfg), Error);
}

}  // namespace
}  // namespace of::kernels

namespace of::kernels {

TEST_CASE("gemm: a constant B takes the packed oneDNN path and matches the reference", "[kernels]") {
  // Linear layers as PyTorch exports them: B [N,K] read transposed, bias [N]; and B [K,N], no bias.
  for (bool tb : {true, false}) {
    for (bool bias : {true, false}) {
      const int64_t m = 5, n = 33, k = 70;
      std::mt19937 rng(3);
      const Shape b_shape = tb ? Shape{n, k} : Shape{k, n};
      std::vector<float> a = testing::random_floats(m * k, rng), b = testing::random_floats(n * k, rng),
                         c = testing::random_floats(n, rng);
      Attrs attrs;
      attrs.set_int("trans_b", tb);
      std::vector<Shape> shapes{{m, k}, b_shape};
      if (bias) shapes.push_back({n});
      KernelConfig cfg{attrs, testing::f32_descs(shapes), testing::f32_descs({{m, n}}), "test_node"};
      cfg.constants = {nullptr, b.data(), nullptr};
      REQUIRE(cpu::make_packed_gemm(cfg) != nullptr);  // the packed path is the one under test
      auto kernel = make_kernel("gemm", DeviceKind::cpu, DType::f32, cfg);
      std::vector<float> b_garbage(b.size(), 1e9f);  // run() must use the packed copy, not in[1]
      std::vector<float> y(size_t(m * n));
      const void* ins[] = {a.data(), b_garbage.data(), c.data()};
      void* outs[] = {y.data()};
      kernel->run({}, ins, outs);
      GemmCase g{m, n, k, false, tb, 1.0f, 1.0f, bias ? std::optional<Shape>(Shape{n}) : std::nullopt};
      INFO("trans_b " << tb << " bias " << bias);
      testing::check_close(y, reference(g, a, b, bias ? &c : nullptr));
    }
  }
}

}  // namespace of::kernels

namespace of::kernels {

TEST_CASE("gemm: a fused relu equals relu(gemm), packed and unpacked", "[kernels]") {
  const int64_t m = 4, n = 9, k = 12;
  std::mt19937 rng(9);
  std::vector<float> a = testing::random_floats(m * k, rng), b = testing::random_floats(n * k, rng), c = testing::random_floats(n, rng);
  Attrs attrs;
  attrs.set_int("trans_b", 1);
  attrs.set_str("activation", "relu");
  GemmCase g{m, n, k, false, true, 1.0f, 1.0f, Shape{n}};
  std::vector<double> want = reference(g, a, b, &c);
  for (double& v : want) v = v > 0 ? v : 0;
  for (bool packed : {false, true}) {
    KernelConfig cfg{attrs, testing::f32_descs({{m, k}, {n, k}, {n}}), testing::f32_descs({{m, n}}), "test_node"};
    if (packed) cfg.constants = {nullptr, b.data(), nullptr};
    auto kernel = make_kernel("gemm", DeviceKind::cpu, DType::f32, cfg);
    std::vector<float> y(size_t(m * n));
    const void* ins[] = {a.data(), b.data(), c.data()};
    void* outs[] = {y.data()};
    kernel->run({}, ins, outs);
    INFO("packed " << packed);
    testing::check_close(y, want);
  }
}

}  // namespace of::kernels
