// SPDX-License-Identifier: Apache-2.0
// dropout / dropout_grad: the drop rate, the scale, and that the mask is a function of (seed,
// stream, piece, global element index) alone: the same for a shard at its offset as for the
// whole tensor, the same for the gradient, different when any key changes.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

std::vector<float> drop(const std::string& kernel, const std::vector<float>& x, float ratio, RunCtx ctx,
                        int64_t stream = 7, int64_t offset = 0) {
  Attrs a;
  a.set_float("ratio", ratio);
  a.set_int("stream", stream);
  a.set_int("offset", offset);
  const auto n = int64_t(x.size());
  auto k = testing::prepare(kernel, a, {{n}}, {{n}});
  std::vector<float> y(x.size(), -1.0f);
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  k->run(ctx, in, out);
  return y;
}

int64_t differ(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] == 0.0f) != (b[i] == 0.0f);
  return d;
}

TEST_CASE("dropout: drops a ratio of elements and scales the rest by 1/(1-p)", "[kernels]") {
  const int64_t n = 1 << 20;
  const std::vector<float> ones(size_t(n), 1.0f);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const std::vector<float> y = drop("dropout", ones, p, RunCtx{.piece = 3, .seed = 42});
    int64_t dropped = 0, misscaled = 0;
    for (float v : y) {
      if (v == 0.0f) ++dropped;
      else misscaled += std::fabs(double(v) - 1.0 / (1.0 - double(p))) > 1e-6 / (1.0 - double(p));
    }
    CHECK(misscaled == 0);
    // Binomial: within 5 standard deviations of n p.
    INFO("p = " << p << ", dropped " << dropped);
    CHECK(std::fabs(double(dropped) - n * double(p)) < 5 * std::sqrt(n * double(p) * (1 - double(p))));
  }
}

TEST_CASE("dropout: the mask depends on seed, stream and piece, and on nothing else", "[kernels]") {
  const std::vector<float> ones(4096, 1.0f);
  const std::vector<float> a = drop("dropout", ones, 0.5f, RunCtx{.piece = 5, .seed = 1});
  CHECK(differ(a, drop("dropout", ones, 0.5f, RunCtx{.piece = 5, .seed = 1})) == 0);  // deterministic
  // Another key: about half of the positions change (independent masks).
  for (const auto& other : {drop("dropout", ones, 0.5f, RunCtx{.piece = 6, .seed = 1}),
                            drop("dropout", ones, 0.5f, RunCtx{.piece = 5, .seed = 2}),
                            drop("dropout", ones, 0.5f, RunCtx{.piece = 5, .seed = 1}, 8),
                            drop("dropout", ones, 0.5f, RunCtx{.piece = int64_t(1) << 33, .seed = 1})}) {
    const int64_t d = differ(a, other);
    CHECK(d > 1700);
    CHECK(d < 2400);
  }
}

TEST_CASE("dropout: a shard at its offset draws the whole tensor's mask there", "[kernels]") {
  std::mt19937 rng(3);
  const std::vector<float> x = testing::random_floats(1000, rng);
  const RunCtx ctx{.piece = 11, .seed = 99};
  const std::vector<float> whole = drop("dropout", x, 0.3f, ctx);
  for (int64_t begin : {0, 1, 3, 250, 997}) {  // offsets not a multiple of Philox's 4 words too
    const std::vector<float> part(x.begin() + begin, x.end());
    const std::vector<float> got = drop("dropout", part, 0.3f, ctx, 7, begin);
    INFO("offset " << begin);
    CHECK(std::equal(got.begin(), got.end(), whole.begin() + begin));
  }
}

TEST_CASE("dropout_grad: the gradient passes where the forward kept, with the same scale", "[kernels]") {
  std::mt19937 rng(5);
  const std::vector<float> x = testing::random_floats(777, rng), dy = testing::random_floats(777, rng);
  const RunCtx ctx{.piece = 2, .seed = 8};
  const std::vector<float> y = drop("dropout", x, 0.4f, ctx), dx = drop("dropout_grad", dy, 0.4f, ctx);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    CHECK((y[i] == 0.0f) == (dx[i] == 0.0f));
    if (dx[i] != 0.0f) CHECK(dx[i] == Approx(dy[i] / 0.6f).epsilon(1e-6));
  }
}

TEST_CASE("dropout: bad ratios and offsets are refused", "[kernels]") {
  for (float p : {0.0f, 1.0f, -0.5f, std::nanf("")}) {
    Attrs a;
    a.set_float("ratio", p);
    testing::check_rejects("dropout", a, {{8}}, {{8}});
  }
  Attrs a;
  a.set_float("ratio", 0.5f);
  a.set_int("offset", -1);
  testing::check_rejects("dropout_grad", a, {{8}}, {{8}});
  a.set_int("offset", 0);
  testing::check_rejects("dropout", a, {{8}}, {{9}});
}

}  // namespace
}  // namespace of::kernels
