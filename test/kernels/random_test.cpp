// SPDX-License-Identifier: Apache-2.0
// random: uniform and normal numbers (torch.rand_like, torch.randn_like) with the moments of their
// distributions, keyed by (seed, stream, piece, element): the same key draws the same numbers, any
// other key others.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/registry.h"

namespace of::kernels {
namespace {

Attrs random_attrs(bool normal, float a, float b, int64_t stream = 7) {
  Attrs attrs;
  attrs.set_int("normal", normal ? 1 : 0);
  attrs.set_float("a", a);
  attrs.set_float("b", b);
  attrs.set_int("stream", stream);
  return attrs;
}

std::vector<float> draw(const Attrs& attrs, int64_t n, RunCtx ctx) {
  auto k = make_kernel("random", DeviceKind::cpu, DType::f32, KernelConfig{attrs, {}, {{{n}, DType::f32}}, "test_node"});
  std::vector<float> y(size_t(n), NAN);
  void* out[] = {y.data()};
  k->run(ctx, nullptr, out);
  return y;
}

struct Moments {
  double mean = 0, var = 0;
};

Moments moments(const std::vector<float>& v) {
  Moments m;
  for (float x : v) m.mean += x;
  m.mean /= double(v.size());
  for (float x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= double(v.size() - 1);
  return m;
}

TEST_CASE("random: uniform numbers lie from low up to high with their mean and variance", "[kernels]") {
  const std::vector<float> u = draw(random_attrs(false, -1.0f, 3.0f), 200000, RunCtx{.piece = 2, .seed = 11});
  CHECK(*std::min_element(u.begin(), u.end()) >= -1.0f);
  CHECK(*std::max_element(u.begin(), u.end()) < 3.0f);
  const Moments m = moments(u);
  CHECK(m.mean == Approx(1.0).margin(0.02));            // (low + high) / 2; its standard error is 0.0026
  CHECK(m.var == Approx(16.0 / 12.0).epsilon(0.01));    // (high - low)^2 / 12
}

TEST_CASE("random: normal numbers have the mean, the scale and the normal's one-sigma share", "[kernels]") {
  const std::vector<float> z = draw(random_attrs(true, 0.5f, 2.0f), 200000, RunCtx{.piece = 0, .seed = 5});
  const Moments m = moments(z);
  CHECK(m.mean == Approx(0.5).margin(0.02));
  CHECK(std::sqrt(m.var) == Approx(2.0).epsilon(0.01));
  const auto within = std::count_if(z.begin(), z.end(), [](float x) { return std::fabs(x - 0.5f) < 2.0f; });
  CHECK(double(within) / double(z.size()) == Approx(0.6827).margin(0.005));
  CHECK(std::all_of(z.begin(), z.end(), [](float x) { return std::isfinite(x); }));
}

TEST_CASE("random: the same seed, stream and piece draw the same numbers, any other key others", "[kernels]") {
  const Attrs a = random_attrs(true, 0.0f, 1.0f, 7);
  const std::vector<float> base = draw(a, 64, RunCtx{.piece = 3, .seed = 9});
  CHECK(draw(a, 64, RunCtx{.piece = 3, .seed = 9}) == base);
  CHECK(draw(a, 64, RunCtx{.piece = 4, .seed = 9}) != base);
  CHECK(draw(a, 64, RunCtx{.piece = 3, .seed = 10}) != base);
  CHECK(draw(random_attrs(true, 0.0f, 1.0f, 8), 64, RunCtx{.piece = 3, .seed = 9}) != base);
  // Element i does not depend on the tensor's size: a longer draw starts with the shorter one.
  const std::vector<float> longer = draw(a, 100, RunCtx{.piece = 3, .seed = 9});
  CHECK(std::equal(base.begin(), base.end(), longer.begin()));
}

TEST_CASE("random: bad configs throw naming the node", "[kernels]") {
  CHECK_THROWS_WITH(make_kernel("random", DeviceKind::cpu, DType::f32, KernelConfig{random_attrs(true, 0, 1), {}, {{{4}, DType::i64}}, "test_node"}),
                    Catch::Contains("test_node"));
  Attrs bad = random_attrs(true, 0, 1);
  bad.set_int("normal", 2);
  CHECK_THROWS_WITH(make_kernel("random", DeviceKind::cpu, DType::f32, KernelConfig{bad, {}, {{{4}, DType::f32}}, "test_node"}),
                    Catch::Contains("normal is 2"));
}

}  // namespace
}  // namespace of::kernels
