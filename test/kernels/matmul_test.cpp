// SPDX-License-Identifier: Apache-2.0
// matmul against a naive double reference with numpy semantics: 1-D promotion, batch broadcast.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

using testing::random_floats;

// numpy matmul in double: promotes 1-D operands, broadcasts batch dims, squeezes afterwards.
std::vector<double> reference(Shape a, Shape b, const std::vector<float>& av,
                              const std::vector<float>& bv, Shape& y_shape) {
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  const int64_t m = a[rank - 2], k = a[rank - 1], n = b[rank - 1];
  Shape batch(rank - 2);
  for (size_t i = 0; i + 2 < rank; ++i) batch[i] = a[i] == 1 ? b[i] : a[i];
  const auto as = testing::strides_of(a), bs = testing::strides_of(b);
  std::vector<double> y;
  for (int64_t t = 0; t < numel(batch); ++t) {
    const auto idx = testing::unravel(t, batch);
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      oa += (a[i] == 1 ? 0 : idx[i]) * as[i];
      ob += (b[i] == 1 ? 0 : idx[i]) * bs[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += double(av[oa + i * k + p]) * bv[ob + p * n + j];
        y.push_back(s);
      }
  }
  y_shape = batch;
  if (!a_vec) y_shape.push_back(m);
  if (!b_vec) y_shape.push_back(n);
  return y;
}

TEST_CASE("matmul: numpy shapes (1-D, batched, broadcast) match naive reference", "[kernels]") {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {4, 5}},
                                                      {{2, 3, 4}, {4, 5}},
                                                      {{2, 3, 4}, {2, 4, 5}},
                                                      {{2, 1, 3, 4}, {3, 4, 5}},
                                                      {{1, 3, 4}, {2, 4, 5}},
                                                      {{4}, {4, 5}},
                                                      {{3, 4}, {4}},
                                                      {{4}, {4}},
                                                      {{2, 3, 4}, {4}},
                                                      {{4}, {2, 4, 5}},
                                                      {{2, 3, 17, 33}, {33, 9}},
                                                      {{3, 1, 2, 4}, {1, 2, 4, 3}},
                                                      {{2, 3, 0}, {0, 4}},
                                                      {{0, 3, 4}, {4, 5}}};
  std::mt19937 rng(7);
  for (const auto& [a, b] : cases) {
    INFO(shape_str(a) << " x " << shape_str(b));
    const auto av = random_floats(numel(a), rng), bv = random_floats(numel(b), rng);
    Shape y_shape;
    const auto ref = reference(a, b, av, bv, y_shape);
    const auto y = testing::run_f32("matmul", Attrs{}, {a, b}, {av, bv}, y_shape);
    testing::check_close(y, ref);
  }
}

// The last two dims of a row-major tensor swapped, as a copy.
std::vector<float> swap_last_two(const Shape& s, const std::vector<float>& v) {
  const int64_t r = s[s.size() - 2], c = s.back(), planes = numel(s) / std::max<int64_t>(r * c, 1);
  std::vector<float> t(v.size());
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) t[size_t(p * r * c + j * r + i)] = v[size_t(p * r * c + i * c + j)];
  return t;
}

TEST_CASE("matmul: trans_a and trans_b read an operand with its last two dims swapped, batched and broadcast", "[kernels]") {
  // Shapes as the product reads them; the operand given is stored transposed.
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {4, 5}},          {{2, 3, 4}, {2, 4, 5}},
                                                      {{2, 3, 4}, {4, 5}},       {{1, 3, 4}, {2, 4, 5}},
                                                      {{2, 4, 33, 17}, {2, 4, 17, 9}}, {{2, 1, 3, 4}, {3, 4, 5}},
                                                      {{8, 4, 16, 8}, {8, 4, 8, 16}}, {{2, 3, 0}, {2, 0, 4}}};
  std::mt19937 rng(13);
  for (const auto& [a, b] : cases)
    for (int ta : {0, 1})
      for (int tb : {0, 1}) {
        INFO(shape_str(a) << " x " << shape_str(b) << " trans_a " << ta << " trans_b " << tb);
        const auto av = random_floats(numel(a), rng), bv = random_floats(numel(b), rng);
        Shape y_shape;
        const auto ref = reference(a, b, av, bv, y_shape);
        auto stored = [](Shape s, bool t) {
          if (t) std::swap(s[s.size() - 1], s[s.size() - 2]);
          return s;
        };
        Attrs attrs;
        attrs.set_int("trans_a", ta);
        attrs.set_int("trans_b", tb);
        const auto y = testing::run_f32("matmul", attrs, {stored(a, ta), stored(b, tb)},
                                        {ta ? swap_last_two(a, av) : av, tb ? swap_last_two(b, bv) : bv}, y_shape);
        testing::check_close(y, ref);
      }
  Attrs ta;
  ta.set_int("trans_a", 1);
  testing::check_rejects("matmul", ta, {{4}, {4, 5}}, {{5}});         // a 1-D operand is not transposed
  testing::check_rejects("matmul", ta, {{3, 4}, {4, 5}}, {{3, 5}});   // read as [4, 3]: K differs
}

TEST_CASE("matmul: bad configs throw of::Error", "[kernels]") {
  Attrs none;
  testing::check_rejects("matmul", none, {{3, 4}, {5, 6}}, {{3, 6}});           // inner dims
  testing::check_rejects("matmul", none, {{2, 3, 4}, {3, 4, 6}}, {{3, 3, 6}});  // batch dims
  testing::check_rejects("matmul", none, {{3, 4}, {4, 6}}, {{1, 3, 6}});        // output shape
  testing::check_rejects("matmul", none, {{4}, {4}}, {{1}});                    // 1-D squeezes
  testing::check_rejects("matmul", none, {{}, {4}}, {{}});                      // rank 0
}

TEST_CASE("matmul_tb: A times the transpose of a 2-D B matches matmul with B transposed", "[kernels]") {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {5, 4}}, {{2, 3, 4}, {5, 4}}, {{2, 3, 17, 33}, {9, 33}},
                                                      {{1, 1}, {1, 1}}, {{2, 3, 0}, {4, 0}}, {{0, 3, 4}, {5, 4}}};
  std::mt19937 rng(11);
  for (const auto& [a, b] : cases) {
    INFO(shape_str(a) << " x " << shape_str(b) << "^T");
    const auto av = random_floats(numel(a), rng), bv = random_floats(numel(b), rng);
    const int64_t n = b[0], k = b[1];
    std::vector<float> bt(bv.size());  // [K, N]
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) bt[size_t(j * n + i)] = bv[size_t(i * k + j)];
    Shape y_shape;
    const auto ref = reference(a, {k, n}, av, bt, y_shape);
    const auto y = testing::run_f32("matmul_tb", Attrs{}, {a, b}, {av, bv}, y_shape);
    testing::check_close(y, ref);
  }
  Attrs none;
  testing::check_rejects("matmul_tb", none, {{3, 4}, {5, 3}}, {{3, 5}});        // K differs
  testing::check_rejects("matmul_tb", none, {{2, 3, 4}, {2, 5, 4}}, {{2, 3, 5}});  // B must be 2-D
  testing::check_rejects("matmul_tb", none, {{4}, {5, 4}}, {{5}});              // A must be 2-D or more
  testing::check_rejects("matmul_tb", none, {{3, 4}, {5, 4}}, {{3, 4}});        // output shape
}

}  // namespace
}  // namespace of::kernels
