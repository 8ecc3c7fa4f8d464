// SPDX-License-Identifier: Apache-2.0
// batch_norm (inference) against a double reference; weights changed between runs take effect.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

std::vector<double> reference(const std::vector<std::vector<float>>& d, const Shape& s,
                              double eps) {
  const int64_t c = s[1], inner = numel(s) / (s[0] * s[1]);
  std::vector<double> y(d[0].size());
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t ch = (static_cast<int64_t>(i) / inner) % c;
    y[i] = (d[0][i] - d[3][ch]) / std::sqrt(d[4][ch] + eps) * d[1][ch] + d[2][ch];
  }
  return y;
}

TEST_CASE("batch_norm: matches reference for rank 2, 3 and 4", "[kernels]") {
  std::mt19937 rng(31);
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{4, 3}, Shape{2, 5, 7}}) {
    INFO(shape_str(s));
    const int64_t c = s[1];
    std::vector<std::vector<float>> d{
        testing::random_floats(numel(s), rng), testing::random_floats(c, rng),
        testing::random_floats(c, rng), testing::random_floats(c, rng),
        testing::random_floats(c, rng, 0.1f, 2.0f)};
    Attrs attrs;
    attrs.set_float("epsilon", 1e-3f);
    const std::vector<Shape> shapes{s, {c}, {c}, {c}, {c}};
    testing::check_close(testing::run_f32("batch_norm", attrs, shapes, d, s),
                         reference(d, s, 1e-3));
  }
}

TEST_CASE("batch_norm: a prepared kernel reads the current weights on every run", "[kernels]") {
  const Shape s{1, 2, 3};
  std::mt19937 rng(37);
  std::vector<std::vector<float>> d{testing::random_floats(6, rng), {1, 2}, {0, 0}, {0, 0}, {1, 1}};
  auto kernel = testing::prepare("batch_norm", Attrs{}, {s, {2}, {2}, {2}, {2}}, {s});
  std::vector<float> y(6);
  for (int round = 0; round < 2; ++round) {
    const void* in[] = {d[0].data(), d[1].data(), d[2].data(), d[3].data(), d[4].data()};
    void* out[] = {y.data()};
    kernel->run({}, in, out);
    testing::check_close(y, reference(d, s, 1e-5));
    d[1] = {-3, 0.5f};  // new scale, mean and var for the second run
    d[3] = {0.25f, -1};
    d[4] = {4, 0.5f};
  }
}

TEST_CASE("batch_norm: bad configs throw of::Error", "[kernels]") {
  testing::check_rejects("batch_norm", Attrs{}, {{2, 3, 4}, {3}, {3}, {3}, {4}}, {{2, 3, 4}});
  testing::check_rejects("batch_norm", Attrs{}, {{2, 3, 4}, {3}, {3}, {3}}, {{2, 3, 4}});
  testing::check_rejects("batch_norm", Attrs{}, {{3}, {3}, {3}, {3}, {3}}, {{3}});
}

}  // namespace
}  // namespace of::kernels
