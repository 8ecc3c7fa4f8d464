// SPDX-License-Identifier: Apache-2.0
// reduce_sum against a direct double reference: several axis sets, keepdims 0 and 1, size-1
// axes, and the all-axes default; reduce_l2 (the square root of the sum of squares) alike.
#include <cmath>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

void check_reduce(const Shape& x, const std::vector<int64_t>& axes, bool keepdims,
                  bool axes_attr = true, bool l2 = false) {
  std::vector<bool> reduced(x.size(), !axes_attr);
  for (int64_t a : axes) reduced[a] = true;
  Shape y, y_kept;  // y_kept: keepdims layout, used to index the reference
  for (size_t i = 0; i < x.size(); ++i) {
    y_kept.push_back(reduced[i] ? 1 : x[i]);
    if (!reduced[i] || keepdims) y.push_back(reduced[i] ? 1 : x[i]);
  }
  std::mt19937 rng(17);
  const auto data = testing::random_floats(numel(x), rng);
  std::vector<double> ref(numel(y), 0.0);
  const auto st = testing::strides_of(y_kept);
  for (int64_t i = 0; i < numel(x); ++i) {
    const auto idx = testing::unravel(i, x);
    int64_t o = 0;
    for (size_t d = 0; d < x.size(); ++d) o += reduced[d] ? 0 : idx[d] * st[d];
    ref[o] += l2 ? double(data[i]) * data[i] : data[i];
  }
  if (l2)
    for (double& r : ref) r = std::sqrt(r);
  Attrs attrs;
  if (axes_attr) attrs.set_ints("axes", axes);
  attrs.set_int("keepdims", keepdims);
  INFO(shape_str(x) << " -> " << shape_str(y));
  testing::check_close(testing::run_f32(l2 ? "reduce_l2" : "reduce_sum", attrs, {x}, {data}, y), ref);
}

TEST_CASE("reduce_l2: axis sets with keepdims 0 and 1, empty and absent axes match reference", "[kernels]") {
  const Shape x{2, 3, 4, 5};
  for (bool keep : {false, true})
    for (const auto& axes : std::vector<std::vector<int64_t>>{{0}, {3}, {1, 3}, {0, 2, 3}, {0, 1, 2, 3}}) {
      INFO("keepdims " << keep << ", " << axes.size() << " axes");
      check_reduce(x, axes, keep, true, true);
    }
  check_reduce({3, 0, 2}, {1}, false, true, true);  // empty: norms of 0
  check_reduce({3, 4}, {}, false, false, true);     // absent: all axes
  Attrs mean;
  mean.set_ints("axes", {0});
  mean.set_float("divisor", 2.0f);
  testing::check_rejects("reduce_l2", mean, {{2, 3}}, {{3}});  // a norm takes no divisor
}

TEST_CASE("reduce_sum: axis sets with keepdims 0 and 1 match reference", "[kernels]") {
  const Shape x{2, 3, 4, 5};
  for (bool keep : {false, true})
    for (const auto& axes : std::vector<std::vector<int64_t>>{
             {0}, {1}, {3}, {0, 1}, {1, 3}, {0, 2, 3}, {1, 2}, {0, 1, 2, 3}, {}}) {
      INFO("keepdims " << keep << ", " << axes.size() << " axes");
      check_reduce(x, axes, keep);
    }
}

TEST_CASE("reduce_sum: bias gradient shapes and size-1 axes", "[kernels]") {
  check_reduce({64, 10}, {0}, false);       // Linear bias: [N,C] -> [C]
  check_reduce({4, 6, 5, 5}, {0, 2, 3}, false);  // conv bias
  check_reduce({4, 1, 3}, {1}, true);
  check_reduce({4, 1, 3}, {0, 1}, false);
  check_reduce({1, 1}, {0}, false);
  check_reduce({3, 0, 2}, {1}, false);  // empty: zeros
}

TEST_CASE("reduce_sum: absent axes reduce everything", "[kernels]") {
  check_reduce({3, 4, 5}, {}, false, false);
  check_reduce({3, 4, 5}, {}, true, false);
}

TEST_CASE("reduce_sum: bad configs throw of::Error", "[kernels]") {
  Attrs unsorted;
  unsorted.set_ints("axes", {1, 0});
  testing::check_rejects("reduce_sum", unsorted, {{2, 3}}, {{1, 1}});
  Attrs negative;
  negative.set_ints("axes", {-1});
  testing::check_rejects("reduce_sum", negative, {{2, 3}}, {{2, 1}});
  Attrs out_of_range;
  out_of_range.set_ints("axes", {2});
  testing::check_rejects("reduce_sum", out_of_range, {{2, 3}}, {{2, 3}});
  Attrs keep0;
  keep0.set_ints("axes", {0});
  keep0.set_int("keepdims", 0);
  testing::check_rejects("reduce_sum", keep0, {{2, 3}}, {{1, 3}});  // output shape
  keep0.set_int("keepdims", 2);
  testing::check_rejects("reduce_sum", keep0, {{2, 3}}, {{3}});
}

}  // namespace
}  // namespace of::kernels
