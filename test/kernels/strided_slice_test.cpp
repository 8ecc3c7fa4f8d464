// SPDX-License-Identifier: Apache-2.0
// strided_slice against an index reference (f32 and i64; steps on inner and outer axes, a step
// longer than what is left, an empty result), its gradient as the scatter of dY into zeros, and
// the configs it refuses.
#include <climits>

#include "grad_check.h"

namespace of::kernels {
namespace {

Attrs slice_attrs(const std::vector<int64_t>& starts, const std::vector<int64_t>& steps) {
  Attrs a;
  a.set_ints("starts", starts);
  a.set_ints("steps", steps);
  return a;
}

// The flat index in X of Y's element i.
int64_t source(int64_t i, const Shape& x, const Shape& y, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps) {
  const auto idx = testing::unravel(i, y);
  const auto st = testing::strides_of(x);
  int64_t src = 0;
  for (size_t d = 0; d < x.size(); ++d) src += (starts[d] + idx[d] * steps[d]) * st[d];
  return src;
}

template <class T>
void check_strided(DType dtype, const Shape& x, const Shape& y, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps) {
  INFO(shape_str(x) << " -> " << shape_str(y));
  const auto xv = testing::iota_data<T>(numel(x));
  std::vector<T> got(size_t(numel(y)), T(-1)), ref;
  for (int64_t i = 0; i < numel(y); ++i) ref.push_back(xv[size_t(source(i, x, y, starts, steps))]);
  auto kernel = make_kernel("strided_slice", DeviceKind::cpu, dtype, KernelConfig{slice_attrs(starts, steps), {{x, dtype}}, {{y, dtype}}, "test_node"});
  const void* in[] = {xv.data()};
  void* out[] = {got.data()};
  kernel->run({}, in, out);
  CHECK(got == ref);
}

TEST_CASE("strided_slice: steps on outer and inner axes match the index reference", "[kernels]") {
  check_strided<float>(DType::f32, {2, 7, 8, 3}, {2, 4, 4, 3}, {0, 0, 1, 0}, {1, 2, 2, 1});  // x[:, 0::2, 1::2, :]
  check_strided<float>(DType::f32, {5, 9}, {2, 3}, {1, 2}, {3, 3});
  check_strided<float>(DType::f32, {6}, {1}, {4}, {100});                                   // one element
  check_strided<float>(DType::f32, {4, 6}, {0, 6}, {0, 0}, {1, 1});                         // empty
  check_strided<int64_t>(DType::i64, {3, 10}, {3, 4}, {0, 0}, {1, 3});
  // Negative steps walk back from the start (torch.flip, x[::-2]).
  check_strided<float>(DType::f32, {3, 7}, {3, 7}, {0, 6}, {1, -1});
  check_strided<float>(DType::f32, {4, 7}, {2, 4}, {3, 6}, {-2, -2});
  check_strided<float>(DType::f32, {5}, {1}, {2}, {-6});                                      // a step past the axis
}

TEST_CASE("strided_slice_grad: dY in its places, zeros elsewhere", "[kernels]") {
  const Shape x{2, 7, 8, 3}, y{2, 4, 4, 3};
  const std::vector<int64_t> starts{0, 6, 1, 2}, steps{1, -2, 2, -1};
  std::mt19937 rng(5);
  const auto dy = testing::random_floats(numel(y), rng);
  std::vector<float> want(size_t(numel(x)), 0.0f);
  for (int64_t i = 0; i < numel(y); ++i) want[size_t(source(i, x, y, starts, steps))] = dy[size_t(i)];
  CHECK(testing::run_f32("strided_slice_grad", slice_attrs(starts, steps), {y}, {dy}, x) == want);
}

TEST_CASE("strided_slice: refuses parts outside the input and bad steps, naming the node", "[kernels]") {
  testing::check_rejects("strided_slice", slice_attrs({0, 1}, {1, 2}), {{2, 6}}, {{2, 4}});  // 1, 3, 5, 7: past the end
  testing::check_rejects("strided_slice", slice_attrs({0, 0}, {1, 0}), {{2, 6}}, {{2, 3}});  // step 0
  testing::check_rejects("strided_slice", slice_attrs({0}, {1}), {{2, 6}}, {{2, 3}});        // not one per axis
  testing::check_rejects("strided_slice_grad", slice_attrs({0, 6}, {1, 1}), {{2, 1}}, {{2, 6}});
  testing::check_rejects("strided_slice", slice_attrs({0, 2}, {1, -1}), {{2, 6}}, {{2, 4}});   // 2, 1, 0, -1: before the start
  testing::check_rejects("strided_slice", slice_attrs({0, 5}, {1, INT64_MIN}), {{2, 6}}, {{2, 1}});  // -step overflows
}

}  // namespace
}  // namespace of::kernels
