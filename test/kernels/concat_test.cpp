// SPDX-License-Identifier: Apache-2.0
// concat: exact element movement for f32 and i64, against an index-mapping reference.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

template <class T>
void check_concat(DType dtype, const std::vector<Shape>& xs, int64_t axis) {
  Shape y = xs[0];
  y[axis] = 0;
  std::vector<std::vector<T>> data;
  for (size_t k = 0; k < xs.size(); ++k) {
    y[axis] += xs[k][axis];
    auto d = testing::iota_data<T>(numel(xs[k]));
    for (auto& v : d) v += static_cast<T>(100000 * k);
    data.push_back(d);
  }
  std::vector<T> ref;
  for (int64_t i = 0; i < numel(y); ++i) {
    auto idx = testing::unravel(i, y);
    size_t k = 0;
    while (idx[axis] >= xs[k][axis]) idx[axis] -= xs[k++][axis];
    const auto st = testing::strides_of(xs[k]);
    int64_t src = 0;
    for (size_t d = 0; d < y.size(); ++d) src += idx[d] * st[d];
    ref.push_back(data[k][src]);
  }
  Attrs attrs;
  attrs.set_int("axis", axis);
  INFO("axis " << axis << " output " << shape_str(y));
  CHECK(testing::run_any<T>("concat", dtype, attrs, xs, data, y) == ref);
}

TEST_CASE("concat: any axis and input count, f32 and i64, match index reference", "[kernels]") {
  check_concat<float>(DType::f32, {{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}, 1);
  check_concat<float>(DType::f32, {{2, 3, 4}, {1, 3, 4}}, 0);
  check_concat<float>(DType::f32, {{2, 3, 4}, {2, 3, 2}, {2, 3, 0}, {2, 3, 1}}, 2);
  check_concat<float>(DType::f32, {{7}}, 0);
  check_concat<int64_t>(DType::i64, {{3, 2}, {3, 5}}, 1);
  check_concat<int64_t>(DType::i64, {{4}, {2}, {1}}, 0);
}

// A gradient bucket's padding (compiler/parallel/gradient_bucket.h): zeros after the inputs, on
// every outer row, whatever the output buffer held before.
TEST_CASE("concat: attribute tail leaves zeros after the inputs along the axis", "[kernels]") {
  Attrs attrs;
  attrs.set_int("axis", 0);
  attrs.set_int("tail", 3);
  const std::vector<float> a{1, 2}, b{3, 4, 5};
  CHECK(testing::run_any<float>("concat", DType::f32, attrs, {{2}, {3}}, {a, b}, {8}) == std::vector<float>{1, 2, 3, 4, 5, 0, 0, 0});
  attrs.set_int("axis", 1);
  auto kernel = make_kernel("concat", DeviceKind::cpu, DType::f32, KernelConfig{attrs, {{{2, 1}, DType::f32}}, {{{2, 4}, DType::f32}}, "t"});
  const std::vector<float> x{7, 8};
  std::vector<float> y(8, -1);
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  kernel->run({}, in, out);
  CHECK(y == std::vector<float>{7, 0, 0, 0, 8, 0, 0, 0});
  Attrs too_long;
  too_long.set_int("axis", 0);
  too_long.set_int("tail", 2);
  testing::check_rejects("concat", too_long, {{2}, {3}}, {{6}});  // 2 + 3 + 2 is 7, not 6
  too_long.set_int("tail", -1);
  testing::check_rejects("concat", too_long, {{2}, {3}}, {{4}});
}

TEST_CASE("concat: mismatched shapes throw of::Error", "[kernels]") {
  Attrs axis1;
  axis1.set_int("axis", 1);
  testing::check_rejects("concat", axis1, {{2, 3}, {3, 3}}, {{2, 6}});  // other dim differs
  testing::check_rejects("concat", axis1, {{2, 3}, {2, 3}}, {{2, 7}});  // sum differs
  testing::check_rejects("concat", axis1, {{2, 3}, {2, 3}}, {{2}});     // axis out of range
  testing::check_rejects("concat", axis1, {}, {{2, 3}});                // no inputs
}

}  // namespace
}  // namespace of::kernels
