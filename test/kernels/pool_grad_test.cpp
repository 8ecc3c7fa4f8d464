// SPDX-License-Identifier: Apache-2.0
// max_pool_grad, average_pool_grad and global_average_pool_grad against double central
// differences of the ONNX pooling definitions: floor and ceil shapes, pads, strides, dilations,
// count_include_pad; plus PyTorch's first-max rule on ties.
#include <cstring>
#include <limits>

#include "grad_check.h"
#include "kernels/registry.h"

namespace of::kernels {
namespace {

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil_mode;
  bool include_pad;  // average_pool only
};

Shape pooled(const PoolCase& c) {
  return {c.x[0], c.x[1],
          testing::pool_out_size(c.x[2], c.kernel[0], c.strides[0], c.pads[0], c.pads[2],
                                 c.dilations[0], c.ceil_mode),
          testing::pool_out_size(c.x[3], c.kernel[1], c.strides[1], c.pads[1], c.pads[3],
                                 c.dilations[1], c.ceil_mode)};
}

Attrs pool_attrs(const PoolCase& c, bool max) {
  Attrs attrs;
  attrs.set_ints("kernel_shape", c.kernel);
  attrs.set_ints("strides", c.strides);
  attrs.set_ints("pads", c.pads);
  if (max)
    attrs.set_ints("dilations", c.dilations);
  else
    attrs.set_int("count_include_pad", c.include_pad);
  return attrs;
}

std::vector<double> pool_ref(const PoolCase& c, const std::vector<double>& x, bool max) {
  const Shape y = pooled(c);
  const int64_t h = c.x[2], w = c.x[3];
  std::vector<double> out;
  for (int64_t p = 0; p < c.x[0] * c.x[1]; ++p)
    for (int64_t oy = 0; oy < y[2]; ++oy)
      for (int64_t ox = 0; ox < y[3]; ++ox) {
        double best = -INFINITY, sum = 0;
        int64_t valid = 0, padded = 0;
        for (int64_t i = 0; i < c.kernel[0]; ++i)
          for (int64_t j = 0; j < c.kernel[1]; ++j) {
            const int64_t iy = oy * c.strides[0] - c.pads[0] + i * c.dilations[0];
            const int64_t ix = ox * c.strides[1] - c.pads[1] + j * c.dilations[1];
            if (iy < h + c.pads[2] && ix < w + c.pads[3]) ++padded;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = x[(p * h + iy) * w + ix];
            best = std::max(best, v);
            sum += v;
            ++valid;
          }
        out.push_back(max ? best : sum / double(c.include_pad ? padded : valid));
      }
  return out;
}

void check_pool_grad(const PoolCase& c, bool max) {
  const Shape y = pooled(c);
  std::mt19937 rng(37);
  const auto x = testing::random_floats(numel(c.x), rng);  // distinct: no ties for max
  const auto r = testing::random_floats(numel(y), rng);
  const testing::DoubleFn f = [&](const std::vector<double>& in) { return pool_ref(c, in, max); };
  const auto ref = testing::numeric_grad(f, testing::to_double(x), testing::to_double(r));
  INFO((max ? "max_pool_grad " : "average_pool_grad ") << shape_str(c.x) << " -> "
                                                       << shape_str(y));
  const Attrs attrs = pool_attrs(c, max);
  if (max)
    testing::check_grad(testing::run_f32("max_pool_grad", attrs, {y, c.x}, {r, x}, c.x), ref);
  else
    testing::check_grad(testing::run_f32("average_pool_grad", attrs, {y}, {r}, c.x), ref);
}

const std::vector<PoolCase> cases = {
    {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false},
    {{1, 2, 9, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true},
    {{1, 2, 8, 9}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false},   // ceil mode
    {{1, 2, 8, 9}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {1, 1}, true, true},    // ceil + pads
    {{1, 2, 7, 7}, {2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true},
    {{1, 1, 6, 11}, {3, 4}, {1, 3}, {2, 0, 0, 3}, {1, 1}, false, true},  // asymmetric pads
    {{1, 3, 5, 5}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false},  // overlapping windows
};

TEST_CASE("max_pool_grad: floor/ceil shapes, pads, strides match finite differences",
          "[kernels]") {
  for (const PoolCase& c : cases) check_pool_grad(c, true);
}

TEST_CASE("max_pool_grad: dilations match finite differences", "[kernels]") {
  check_pool_grad({{1, 2, 10, 11}, {3, 2}, {1, 2}, {1, 1, 1, 1}, {2, 3}, false, false}, true);
  check_pool_grad({{1, 2, 10, 11}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {2, 2}, true, false}, true);
}

TEST_CASE("max_pool_grad: ties go to the first maximum in the window", "[kernels]") {
  // One 2x2 window over equal values, and a 3x3 window where the max appears twice.
  const Shape x1{1, 1, 2, 2}, y1{1, 1, 1, 1};
  Attrs k2;
  k2.set_ints("kernel_shape", {2, 2});
  CHECK(testing::run_f32("max_pool_grad", k2, {y1, x1}, {{5.0f}, {1, 1, 1, 1}}, x1) ==
        std::vector<float>{5, 0, 0, 0});
  const Shape x2{1, 1, 3, 3};
  Attrs k3;
  k3.set_ints("kernel_shape", {3, 3});
  const std::vector<float> x2_data{0, 1, 0, 9, 0, 0, 0, 9, 0};
  CHECK(testing::run_f32("max_pool_grad", k3, {y1, x2}, {{2.0f}, x2_data}, x2) ==
        std::vector<float>{0, 0, 0, 2, 0, 0, 0, 0, 0});
}

TEST_CASE("max_pool_grad: a tie across rows goes to the earlier row before the earlier column", "[kernels]") {
  // 9 at (0, 2) and (1, 0): row-major order meets (0, 2) first.
  const Shape x{1, 1, 3, 3}, y{1, 1, 1, 1};
  Attrs k3;
  k3.set_ints("kernel_shape", {3, 3});
  CHECK(testing::run_f32("max_pool_grad", k3, {y, x}, {{2.0f}, {0, 0, 9, 9, 0, 0, 0, 0, 0}}, x) ==
        std::vector<float>{0, 0, 2, 0, 0, 0, 0, 0, 0});
}

// After a ReLU most windows tie at 0: every gradient must land where a row-major scan of the
// window finds its first maximum (resnet's 3x3, stride 2, pad 1, and a dilated 2x3).
TEST_CASE("max_pool_grad: windows full of ties route as a row-major scan", "[kernels]") {
  struct Case {
    Shape x, y;
    std::vector<int64_t> kernel, strides, pads, dilations;
  };
  const Case cases[] = {{{2, 3, 11, 12}, {2, 3, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
                        {{1, 2, 9, 10}, {1, 2, 5, 4}, {2, 3}, {2, 2}, {1, 0, 0, 1}, {2, 2}},
                        // 2x2, stride 2 (a loop of its own): odd heights and widths leave a row
                        // and a column that no window reads
                        {{2, 3, 11, 12}, {2, 3, 5, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
                        {{1, 2, 8, 9}, {1, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}}};
  for (const Case& c : cases) {
    std::mt19937 rng(9);
    std::uniform_int_distribution<int> pick(0, 3);
    std::vector<float> x(size_t(numel(c.x))), dy(size_t(numel(c.y)));
    for (float& v : x) v = pick(rng) < 3 ? 0.0f : float(pick(rng));  // mostly zeros, a few 0..3
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i + 1);
    Attrs a;
    a.set_ints("kernel_shape", c.kernel);
    a.set_ints("strides", c.strides);
    a.set_ints("pads", c.pads);
    a.set_ints("dilations", c.dilations);
    std::vector<float> want(x.size(), 0.0f);
    const int64_t h = c.x[2], w = c.x[3], oh = c.y[2], ow = c.y[3];
    for (int64_t p = 0; p < c.x[0] * c.x[1]; ++p)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          int64_t best = -1;
          for (int64_t i = 0; i < c.kernel[0]; ++i)
            for (int64_t j = 0; j < c.kernel[1]; ++j) {
              const int64_t ih = r * c.strides[0] - c.pads[0] + i * c.dilations[0];
              const int64_t iw = q * c.strides[1] - c.pads[1] + j * c.dilations[1];
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const int64_t at = p * h * w + ih * w + iw;
              if (best < 0 || x[size_t(at)] > x[size_t(best)]) best = at;
            }
          if (best >= 0) want[size_t(best)] += dy[size_t((p * oh + r) * ow + q)];
        }
    INFO("x " << shape_str(c.x));
    CHECK(testing::run_f32("max_pool_grad", a, {c.y, c.x}, {dy, x}, c.x) == want);
  }
}

// PyTorch's scan takes a tap when `x > max || isnan(x)`: the last NaN of a window wins. Its dx
// starts zeroed, so a -0 gradient lands as +0: bit for bit, in the 2x2 loop as in the general one.
TEST_CASE("max_pool_grad: NaN windows and -0 gradients, 2x2 stride 2 and 3x3 stride 2, bit for bit", "[kernels]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t k : {2, 3}) {
    const Shape x{1, 2, 6, 7};
    const int64_t h = 6, w = 7, oh = (h - k) / 2 + 1, ow = (w - k) / 2 + 1;
    const Shape y{1, 2, oh, ow};
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> pick(0, 5);
    std::vector<float> xs(size_t(numel(x))), dy(size_t(numel(y)));
    for (float& v : xs) v = pick(rng) == 0 ? nan : float(pick(rng) % 3);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = i % 3 == 0 ? -0.0f : float(i) - 4.5f;
    std::vector<float> want(xs.size(), 0.0f);
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          int64_t best = p * h * w + 2 * r * w + 2 * q;
          float m = xs[size_t(best)];
          for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < k; ++j) {
              const int64_t at = p * h * w + (2 * r + i) * w + 2 * q + j;
              if (xs[size_t(at)] > m || std::isnan(xs[size_t(at)])) m = xs[size_t(at)], best = at;
            }
          want[size_t(best)] += dy[size_t((p * oh + r) * ow + q)];
        }
    Attrs a;
    a.set_ints("kernel_shape", {k, k});
    a.set_ints("strides", {2, 2});
    const std::vector<float> got = testing::run_f32("max_pool_grad", a, {y, x}, {dy, xs}, x);
    REQUIRE(got.size() == want.size());
    INFO("kernel " << k);
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("max_pool_grad: overlapping windows accumulate into a shared maximum", "[kernels]") {
  const Shape x{1, 1, 1, 3}, y{1, 1, 1, 2};
  Attrs attrs;
  attrs.set_ints("kernel_shape", {1, 2});
  CHECK(testing::run_f32("max_pool_grad", attrs, {y, x}, {{1.0f, 2.0f}, {0, 7, 0}}, x) ==
        std::vector<float>{0, 3, 0});
}

TEST_CASE("average_pool_grad: count_include_pad 0 and 1 match finite differences",
          "[kernels]") {
  for (const PoolCase& c : cases) {
    check_pool_grad(c, false);
    PoolCase flipped = c;
    flipped.include_pad = !c.include_pad;
    check_pool_grad(flipped, false);
  }
}

TEST_CASE("global_average_pool_grad: rank 3, 4 and 5 match finite differences", "[kernels]") {
  std::mt19937 rng(41);
  for (const Shape& s : {Shape{2, 3, 7}, Shape{2, 3, 4, 5}, Shape{1, 2, 2, 3, 2}}) {
    INFO(shape_str(s));
    Shape y(s.size(), 1);
    y[0] = s[0];
    y[1] = s[1];
    const int64_t planes = s[0] * s[1], spatial = numel(s) / planes;
    const testing::DoubleFn f = [&](const std::vector<double>& in) {
      std::vector<double> out(planes, 0.0);
      for (int64_t i = 0; i < numel(s); ++i) out[i / spatial] += in[i] / double(spatial);
      return out;
    };
    const auto x = testing::random_floats(numel(s), rng);
    const auto r = testing::random_floats(planes, rng);
    testing::check_grad(testing::run_f32("global_average_pool_grad", Attrs{}, {y}, {r}, s),
                        testing::numeric_grad(f, testing::to_double(x), testing::to_double(r)));
  }
}

TEST_CASE("pool_grad: bad configs throw of::Error", "[kernels]") {
  Attrs k2;
  k2.set_ints("kernel_shape", {2, 2});
  k2.set_ints("strides", {2, 2});
  // max_pool_grad: (dy, x) -> dx
  testing::check_rejects("max_pool_grad", k2, {{1, 1, 4, 4}, {1, 1, 5, 5}}, {{1, 1, 5, 5}});
  testing::check_rejects("max_pool_grad", k2, {{1, 1, 2, 2}, {1, 1, 5, 5}}, {{1, 1, 4, 4}});
  testing::check_rejects("max_pool_grad", k2, {{1, 1, 2, 2}}, {{1, 1, 5, 5}});
  testing::check_rejects("max_pool_grad", Attrs{}, {{1, 1, 2, 2}, {1, 1, 4, 4}}, {{1, 1, 4, 4}});
  // average_pool_grad: (dy) -> dx
  testing::check_rejects("average_pool_grad", k2, {{1, 2, 2, 2}}, {{1, 1, 5, 5}});
  testing::check_rejects("average_pool_grad", k2, {{1, 2, 2}}, {{1, 5, 5}});
  Attrs dil = k2;
  dil.set_ints("dilations", {2, 2});
  testing::check_rejects("average_pool_grad", dil, {{1, 1, 2, 2}}, {{1, 1, 6, 6}});
  // global_average_pool_grad: (dy) -> dx
  testing::check_rejects("global_average_pool_grad", Attrs{}, {{2, 3, 1}}, {{2, 3, 4, 4}});
  testing::check_rejects("global_average_pool_grad", Attrs{}, {{2, 3}}, {{2, 3}});
}

}  // namespace
}  // namespace of::kernels

namespace of::kernels {

// Planes split between two kernel threads, on a tensor large enough to split: each plane's
// gradient is the one-thread gradient, bit for bit (2x2 stride 2, and resnet's 3x3 stride 2 pad 1).
TEST_CASE("max_pool_grad: on two kernel threads the planes split between them, with the one-thread bits", "[kernels]") {
  const Shape x{2, 16, 32, 33};
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> pick(0, 3);
  std::vector<float> xs(size_t(numel(x)));
  for (float& v : xs) v = pick(rng) < 2 ? 0.0f : float(pick(rng));  // ties, as after a ReLU
  for (const bool resnet : {false, true}) {
    Attrs a;
    a.set_ints("kernel_shape", resnet ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{2, 2});
    a.set_ints("strides", {2, 2});
    a.set_ints("pads", resnet ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{0, 0, 0, 0});
    const Shape y{2, 16, 16, resnet ? 17 : 16};
    std::vector<float> dy(size_t(numel(y)));
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 97) - 40.0f;
    set_kernel_threads(1);
    const std::vector<float> one = testing::run_f32("max_pool_grad", a, {y, x}, {dy, xs}, x);
    set_kernel_threads(2);
    const std::vector<float> two = testing::run_f32("max_pool_grad", a, {y, x}, {dy, xs}, x);
    set_kernel_threads(1);
    INFO(std::string(resnet ? "3x3 stride 2 pad 1" : "2x2 stride 2"));
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
  }
}

}  // namespace of::kernels
