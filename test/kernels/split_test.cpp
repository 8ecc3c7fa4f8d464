// SPDX-License-Identifier: Apache-2.0
// split: unequal parts on several axes, f32 and i64, against an index-mapping reference;
// outputs that do not tile the input are refused.
#include "grad_check.h"

namespace of::kernels {
namespace {

template <class T>
void check_split(DType dtype, const Shape& x, int64_t axis, const std::vector<int64_t>& sizes) {
  const auto xv = testing::iota_data<T>(numel(x));
  const auto st = testing::strides_of(x);
  std::vector<TensorDesc> outs;
  std::vector<std::vector<T>> got, ref;
  int64_t start = 0;
  for (int64_t n : sizes) {
    Shape y = x;
    y[size_t(axis)] = n;
    outs.push_back({y, dtype});
    got.emplace_back(size_t(numel(y)), T(-1));
    std::vector<T> r;
    for (int64_t i = 0; i < numel(y); ++i) {
      auto idx = testing::unravel(i, y);
      idx[size_t(axis)] += start;
      int64_t src = 0;
      for (size_t d = 0; d < x.size(); ++d) src += idx[d] * st[d];
      r.push_back(xv[size_t(src)]);
    }
    ref.push_back(r);
    start += n;
  }
  Attrs attrs;
  attrs.set_int("axis", axis);
  auto kernel = make_kernel("split", DeviceKind::cpu, dtype,
                            KernelConfig{attrs, {{x, dtype}}, outs, "test_node"});
  std::vector<void*> out_ptrs;
  for (auto& g : got) out_ptrs.push_back(g.data());
  const void* in[] = {xv.data()};
  kernel->run({}, in, out_ptrs.data());
  INFO(shape_str(x) << " axis " << axis);
  CHECK(got == ref);
}

TEST_CASE("split: unequal parts on axes 0 and 1 match index reference", "[kernels]") {
  check_split<float>(DType::f32, {5, 3}, 0, {1, 4});
  check_split<float>(DType::f32, {6, 2, 3}, 0, {3, 2, 1});
  check_split<float>(DType::f32, {2, 6, 2}, 1, {1, 2, 3});
  check_split<float>(DType::f32, {4, 7}, 1, {5, 0, 2});  // an empty part
  check_split<float>(DType::f32, {2, 3, 5}, 2, {4, 1});
  check_split<float>(DType::f32, {9}, 0, {9});
  check_split<int64_t>(DType::i64, {3, 5}, 1, {2, 3});
  check_split<int64_t>(DType::i64, {4, 2}, 0, {1, 1, 2});
}

// Concat's padding dropped: the input's last `tail` entries along the axis go to no output.
TEST_CASE("split: attribute tail drops the input's last entries along the axis", "[kernels]") {
  Attrs attrs;
  attrs.set_int("axis", 1);
  attrs.set_int("tail", 2);
  auto kernel = make_kernel("split", DeviceKind::cpu, DType::f32,
                            KernelConfig{attrs, {{{2, 5}, DType::f32}}, {{{2, 1}, DType::f32}, {{2, 2}, DType::f32}}, "t"});
  const std::vector<float> x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> a(2, -1), b(4, -1);
  const void* in[] = {x.data()};
  void* out[] = {a.data(), b.data()};
  kernel->run({}, in, out);
  CHECK(a == std::vector<float>{0, 5});
  CHECK(b == std::vector<float>{1, 2, 6, 7});
  testing::check_rejects("split", attrs, {{2, 5}}, {{2, 1}, {2, 1}});  // 1 + 1 + 2 is 4, not 5
  attrs.set_int("tail", 6);
  testing::check_rejects("split", attrs, {{2, 5}}, {{2, 0}});
}

TEST_CASE("split: bad configs throw of::Error", "[kernels]") {
  Attrs axis1;
  axis1.set_int("axis", 1);
  Attrs axis2;
  axis2.set_int("axis", 2);
  Attrs negative;
  negative.set_int("axis", -1);
  testing::check_rejects("split", axis1, {{2, 6}}, {{2, 2}, {2, 3}});  // sizes sum to 5
  testing::check_rejects("split", axis1, {{2, 6}}, {{2, 2}, {3, 4}});  // off-axis dim differs
  testing::check_rejects("split", axis1, {{2, 6}}, {{2, 2}, {2, 4, 1}});  // rank differs
  testing::check_rejects("split", axis2, {{2, 6}}, {{2, 6}});          // axis out of range
  testing::check_rejects("split", negative, {{2, 6}}, {{2, 6}});       // negative axis
  testing::check_rejects("split", Attrs{}, {{2, 6}}, {{2, 6}});        // axis is required
  testing::check_rejects("split", axis1, {{2, 6}}, {});                // no outputs
  testing::check_rejects_descs("split", axis1, {{{2, 6}, DType::f32}},
                               {{{2, 3}, DType::f32}, {{2, 3}, DType::i64}});
}

}  // namespace
}  // namespace of::kernels
