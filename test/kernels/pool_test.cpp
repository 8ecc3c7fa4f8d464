// SPDX-License-Identifier: Apache-2.0
// max_pool, average_pool and global_average_pool against direct references written from the
// ONNX definitions: floor and ceil output sizes, pads, strides, dilations, count_include_pad.
#include <limits>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil_mode;
  bool include_pad;  // average_pool only
};

std::pair<Shape, Attrs> setup(const PoolCase& c, bool max) {
  const Shape y{c.x[0], c.x[1],
                testing::pool_out_size(c.x[2], c.kernel[0], c.strides[0], c.pads[0], c.pads[2],
                                       c.dilations[0], c.ceil_mode),
                testing::pool_out_size(c.x[3], c.kernel[1], c.strides[1], c.pads[1], c.pads[3],
                                       c.dilations[1], c.ceil_mode)};
  Attrs attrs;
  attrs.set_ints("kernel_shape", c.kernel);
  attrs.set_ints("strides", c.strides);
  attrs.set_ints("pads", c.pads);
  if (max)
    attrs.set_ints("dilations", c.dilations);
  else
    attrs.set_int("count_include_pad", c.include_pad);
  return {y, attrs};
}

void check_pool(const PoolCase& c, bool max) {
  const auto [y, attrs] = setup(c, max);
  std::mt19937 rng(23);
  const auto x = testing::random_floats(numel(c.x), rng);
  const int64_t h = c.x[2], w = c.x[3];
  std::vector<double> ref;
  for (int64_t p = 0; p < c.x[0] * c.x[1]; ++p)
    for (int64_t oy = 0; oy < y[2]; ++oy)
      for (int64_t ox = 0; ox < y[3]; ++ox) {
        double best = -INFINITY, sum = 0;
        int64_t valid = 0, padded = 0;
        for (int64_t i = 0; i < c.kernel[0]; ++i)
          for (int64_t j = 0; j < c.kernel[1]; ++j) {
            const int64_t iy = oy * c.strides[0] - c.pads[0] + i * c.dilations[0];
            const int64_t ix = ox * c.strides[1] - c.pads[1] + j * c.dilations[1];
            // Positions inside the padded extent count for count_include_pad=1.
            if (iy < h + c.pads[2] && ix < w + c.pads[3]) ++padded;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = x[(p * h + iy) * w + ix];
            best = std::max(best, v);
            sum += v;
            ++valid;
          }
        ref.push_back(max ? best : sum / double(c.include_pad ? padded : valid));
      }
  INFO((max ? "max_pool " : "average_pool ") << shape_str(c.x) << " -> " << shape_str(y));
  testing::check_close(testing::run_f32(max ? "max_pool" : "average_pool", attrs, {c.x}, {x}, y),
                       ref);
}

const std::vector<PoolCase> cases = {
    {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false},
    {{1, 2, 9, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true},
    {{1, 2, 9, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false},
    {{1, 2, 8, 9}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, false},  // ceil mode
    {{1, 2, 8, 9}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {1, 1}, true, true},   // ceil + pads
    {{1, 2, 7, 7}, {2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true},
    {{1, 1, 6, 11}, {3, 4}, {1, 3}, {2, 0, 0, 3}, {1, 1}, false, true},  // asymmetric pads
    {{1, 3, 5, 5}, {5, 5}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false, false},  // window = input
};

TEST_CASE("max_pool: floor/ceil sizes, pads and strides match direct reference", "[kernels]") {
  for (const PoolCase& c : cases) check_pool(c, true);
}

TEST_CASE("max_pool: dilations match direct reference", "[kernels]") {
  check_pool({{1, 2, 10, 11}, {3, 2}, {1, 2}, {1, 1, 1, 1}, {2, 3}, false, false}, true);
  check_pool({{1, 2, 10, 11}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {2, 2}, true, false}, true);
}

TEST_CASE("max_pool: padding never wins the max", "[kernels]") {
  const Shape s{1, 1, 2, 2};
  const std::vector<float> x(4, -5.0f);
  Attrs attrs;
  attrs.set_ints("kernel_shape", {3, 3});
  attrs.set_ints("pads", {1, 1, 1, 1});
  const auto y = testing::run_f32("max_pool", attrs, {s}, {x}, s);
  for (float v : y) CHECK(v == -5.0f);
}

TEST_CASE("average_pool: count_include_pad 0 and 1, with ceil mode, match ONNX reference",
          "[kernels]") {
  for (const PoolCase& c : cases) {
    check_pool(c, false);
    PoolCase flipped = c;
    flipped.include_pad = !c.include_pad;
    check_pool(flipped, false);
  }
}

TEST_CASE("global_average_pool: rank 3, 4 and 5 match reference", "[kernels]") {
  std::mt19937 rng(29);
  for (const Shape& s : {Shape{2, 3, 7}, Shape{2, 3, 4, 5}, Shape{1, 2, 2, 3, 2}}) {
    INFO(shape_str(s));
    Shape y(s.size(), 1);
    y[0] = s[0];
    y[1] = s[1];
    const auto x = testing::random_floats(numel(s), rng);
    const int64_t spatial = numel(s) / (s[0] * s[1]);
    std::vector<double> ref(s[0] * s[1], 0.0);
    for (int64_t i = 0; i < numel(s); ++i) ref[i / spatial] += x[i] / double(spatial);
    testing::check_close(testing::run_f32("global_average_pool", Attrs{}, {s}, {x}, y), ref);
  }
}

TEST_CASE("pool: bad configs throw of::Error", "[kernels]") {
  Attrs k2;
  k2.set_ints("kernel_shape", {2, 2});
  k2.set_ints("strides", {2, 2});
  testing::check_rejects("max_pool", k2, {{1, 1, 5, 5}}, {{1, 1, 4, 4}});  // neither floor nor ceil
  testing::check_rejects("max_pool", k2, {{1, 1, 5, 5}}, {{1, 2, 2, 2}});  // channels
  testing::check_rejects("average_pool", k2, {{1, 5, 5}}, {{1, 2, 2}});    // 1-D
  testing::check_rejects("max_pool", Attrs{}, {{1, 1, 4, 4}}, {{1, 1, 2, 2}});  // no kernel_shape
  Attrs dil = k2;
  dil.set_ints("dilations", {2, 2});
  testing::check_rejects("average_pool", dil, {{1, 1, 6, 6}}, {{1, 1, 2, 2}});
  testing::check_rejects("global_average_pool", Attrs{}, {{2, 3, 4, 4}}, {{2, 3, 1}});
  testing::check_rejects("global_average_pool", Attrs{}, {{2, 3}}, {{2, 3}});
}

}  // namespace
}  // namespace of::kernels
