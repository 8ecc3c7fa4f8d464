// SPDX-License-Identifier: Apache-2.0
// where and expand against an index-mapping reference over numpy broadcasting (each operand
// right-aligned against the output, size-1 dims read at index 0).
#include "grad_check.h"

namespace of::kernels {
namespace {

// Flat index into operand shape s of the output element at multi-index idx (output rank).
int64_t broadcast_index(const std::vector<int64_t>& idx, const Shape& s) {
  const size_t off = idx.size() - s.size();
  const auto st = testing::strides_of(s);
  int64_t flat = 0;
  for (size_t i = 0; i < s.size(); ++i) flat += (s[i] == 1 ? 0 : idx[i + off]) * st[i];
  return flat;
}

void check_where(const Shape& c, const Shape& a, const Shape& b, const Shape& y) {
  std::mt19937 rng(17);
  std::vector<uint8_t> cond(static_cast<size_t>(numel(c)));
  // Nonzero values other than 1 must count as true too.
  for (size_t i = 0; i < cond.size(); ++i) cond[i] = uint8_t(rng() % 2 ? 1 + rng() % 255 : 0);
  const auto av = testing::random_floats(numel(a), rng, 1, 2);
  const auto bv = testing::random_floats(numel(b), rng, -2, -1);
  std::vector<float> ref(static_cast<size_t>(numel(y)));
  for (int64_t i = 0; i < numel(y); ++i) {
    const auto idx = testing::unravel(i, y);
    ref[size_t(i)] = cond[size_t(broadcast_index(idx, c))] ? av[size_t(broadcast_index(idx, a))]
                                                           : bv[size_t(broadcast_index(idx, b))];
  }
  std::vector<float> got(ref.size(), std::nanf(""));
  testing::run_kernel("where", Attrs{}, {{c, DType::bool_}, {a, DType::f32}, {b, DType::f32}},
                      {{y, DType::f32}}, {cond.data(), av.data(), bv.data()}, {got.data()});
  INFO("cond " << shape_str(c) << " a " << shape_str(a) << " b " << shape_str(b));
  CHECK(got == ref);
}

TEST_CASE("where: cond 2x1x4 with a 3x4 and a scalar b broadcasts to 2x3x4", "[kernels]") {
  check_where({2, 1, 4}, {3, 4}, {}, {2, 3, 4});
}

TEST_CASE("where: same shapes, scalar cond and mixed broadcasts match index reference",
          "[kernels]") {
  check_where({5, 7}, {5, 7}, {5, 7}, {5, 7});
  check_where({}, {2, 3}, {2, 3}, {2, 3});
  check_where({3, 1}, {1, 4}, {3, 4}, {3, 4});
  check_where({4}, {2, 1, 1}, {1, 3, 1}, {2, 3, 4});
  check_where({2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}, {2}, {2, 4, 3, 5, 2});
  check_where({1}, {1}, {1}, {1});
  check_where({0, 3}, {3}, {}, {0, 3});
}

TEST_CASE("where: each operand broadcast or not along the last axis, as a causal mask and its gradient use it", "[kernels]") {
  // Every combination of the three operands stepping along the last axis (stride 1) or standing
  // still there (stride 0: a scalar or a size-1 last dim), over rows of 37 (a vector loop's tail);
  // one of them steps, or the output would have no last axis of 37.
  for (int mask = 1; mask < 8; ++mask) {
    const Shape c = mask & 4 ? Shape{3, 37} : Shape{2, 3, 1}, a = mask & 2 ? Shape{2, 3, 37} : Shape{}, b = mask & 1 ? Shape{2, 3, 37} : Shape{2, 1, 1};
    check_where(c, a, b, {2, 3, 37});
  }
  check_where({128, 128}, {}, {2, 4, 128, 128}, {2, 4, 128, 128});  // masked_fill(-inf) of attention scores
}

template <class T>
void check_expand(DType dtype, const Shape& x, const Shape& y) {
  const auto xv = testing::iota_data<T>(numel(x));
  std::vector<T> ref;
  for (int64_t i = 0; i < numel(y); ++i)
    ref.push_back(xv[size_t(broadcast_index(testing::unravel(i, y), x))]);
  INFO(shape_str(x) << " to " << shape_str(y));
  CHECK(testing::run_any<T>("expand", dtype, Attrs{}, {x}, {xv}, y) == ref);
}

TEST_CASE("expand: f32 and i64 broadcast to the output shape", "[kernels]") {
  check_expand<float>(DType::f32, {3, 1}, {2, 3, 4});
  check_expand<float>(DType::f32, {}, {2, 2});
  check_expand<float>(DType::f32, {1, 4}, {3, 4});
  check_expand<float>(DType::f32, {4}, {3, 4});
  check_expand<float>(DType::f32, {2, 3}, {2, 3});
  check_expand<float>(DType::f32, {1, 3, 1, 2}, {4, 3, 5, 2});
  check_expand<float>(DType::f32, {3}, {0, 3});
  check_expand<int64_t>(DType::i64, {2, 1, 3}, {2, 5, 3});
  check_expand<int64_t>(DType::i64, {1}, {7});
}

TEST_CASE("where expand: bad configs throw of::Error", "[kernels]") {
  const auto f32 = [](Shape s) { return TensorDesc{std::move(s), DType::f32}; };
  const auto cond = [](Shape s) { return TensorDesc{std::move(s), DType::bool_}; };
  // shapes that do not broadcast, a wrong output shape, cond not bool, arity, rank 9
  testing::check_rejects_descs("where", Attrs{}, {cond({3}), f32({4}), f32({})}, {f32({4})});
  testing::check_rejects_descs("where", Attrs{}, {cond({3, 1}), f32({4}), f32({})},
                               {f32({4, 3})});
  testing::check_rejects_descs("where", Attrs{}, {f32({4}), f32({4}), f32({4})}, {f32({4})});
  testing::check_rejects_descs("where", Attrs{}, {cond({4}), f32({4})}, {f32({4})});
  testing::check_rejects_descs("where", Attrs{}, {cond(Shape(9, 1)), f32({}), f32({})},
                               {f32(Shape(9, 1))});
  // expand: not broadcastable, output of lower rank, dtype mismatch, arity
  testing::check_rejects("expand", Attrs{}, {{3}}, {{4}});
  testing::check_rejects("expand", Attrs{}, {{2, 3}}, {{3}});
  testing::check_rejects("expand", Attrs{}, {{3, 1}}, {{2, 1, 4}});
  testing::check_rejects_descs("expand", Attrs{}, {{{3}, DType::i64}}, {f32({2, 3})});
  testing::check_rejects("expand", Attrs{}, {{3}, {3}}, {{3}});
}

}  // namespace
}  // namespace of::kernels
