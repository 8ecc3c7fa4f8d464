// SPDX-License-Identifier: Apache-2.0
// slice: one part of an axis, f32 and i64, against an index-mapping reference; parts outside the
// input refused.
#include "grad_check.h"

namespace of::kernels {
namespace {

template <class T>
void check_slice(DType dtype, const Shape& x, int64_t axis, int64_t start, int64_t len) {
  const auto xv = testing::iota_data<T>(numel(x));
  const auto st = testing::strides_of(x);
  Shape y = x;
  y[size_t(axis)] = len;
  std::vector<T> got(size_t(numel(y)), T(-1)), ref;
  for (int64_t i = 0; i < numel(y); ++i) {
    auto idx = testing::unravel(i, y);
    idx[size_t(axis)] += start;
    int64_t src = 0;
    for (size_t d = 0; d < x.size(); ++d) src += idx[d] * st[d];
    ref.push_back(xv[size_t(src)]);
  }
  Attrs attrs;
  attrs.set_int("axis", axis);
  attrs.set_int("start", start);
  auto kernel = make_kernel("slice", DeviceKind::cpu, dtype, KernelConfig{attrs, {{x, dtype}}, {{y, dtype}}, "test_node"});
  const void* in[] = {xv.data()};
  void* out[] = {got.data()};
  kernel->run({}, in, out);
  INFO(shape_str(x) << " axis " << axis << " from " << start << ", " << len << " long");
  CHECK(got == ref);
}

TEST_CASE("slice: a part of the first, a middle and the last axis matches the index reference", "[kernels]") {
  check_slice<float>(DType::f32, {5, 3}, 0, 1, 3);
  check_slice<float>(DType::f32, {2, 6, 2}, 1, 2, 4);
  check_slice<float>(DType::f32, {2, 3, 5}, 2, 4, 1);
  check_slice<float>(DType::f32, {4, 7}, 1, 7, 0);  // empty, at the end
  check_slice<int64_t>(DType::i64, {3, 5}, 1, 0, 5);
}

TEST_CASE("slice: parts outside the input and bad configs throw of::Error", "[kernels]") {
  Attrs a;
  a.set_int("axis", 1);
  a.set_int("start", 4);
  testing::check_rejects("slice", a, {{2, 6}}, {{2, 3}});  // past the end
  a.set_int("start", -1);
  testing::check_rejects("slice", a, {{2, 6}}, {{2, 2}});
  a.set_int("start", 0);
  testing::check_rejects("slice", a, {{2, 6}}, {{3, 2}});  // off-axis dim differs
  a.set_int("axis", 2);
  testing::check_rejects("slice", a, {{2, 6}}, {{2, 6}});  // axis out of range
}

}  // namespace
}  // namespace of::kernels
