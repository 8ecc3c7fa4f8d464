// SPDX-License-Identifier: Apache-2.0
// The comparisons (f32 and i64, broadcast, NaN), logical and/or/not, cast, and the int64
// arithmetic of ids (add, sub, mul, clip_int) against their definitions, element by element.
#include <cmath>
#include <cstring>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

// Runs `name` on raw inputs; returns the output's bytes.
std::vector<uint8_t> run_raw(const std::string& name, const std::vector<TensorDesc>& in, const std::vector<const void*>& data, TensorDesc out) {
  auto kernel = make_kernel(name, DeviceKind::cpu, out.dtype, KernelConfig{Attrs{}, in, {out}, "test_node"});
  std::vector<uint8_t> y(size_t(out.bytes()), 0xEE);
  void* outs[] = {y.data()};
  kernel->run({}, data.data(), outs);
  return y;
}

TEST_CASE("compare: f32 and i64 comparisons broadcast, NaN compares false", "[kernels]") {
  const std::vector<float> a = {1.0f, 2.0f, NAN, -1.0f, 0.0f, 3.0f};  // [2, 3]
  const std::vector<float> b = {2.0f, 2.0f, 1.0f};                  // [3]
  const TensorDesc ad{{2, 3}, DType::f32}, bd{{3}, DType::f32}, yd{{2, 3}, DType::bool_};
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> want = {
      {"greater", {0, 0, 0, 0, 0, 1}},       {"greater_or_equal", {0, 1, 0, 0, 0, 1}}, {"less", {1, 0, 0, 1, 1, 0}},
      {"less_or_equal", {1, 1, 0, 1, 1, 0}}, {"equal", {0, 1, 0, 0, 0, 0}}};
  for (const auto& [name, bits] : want) {
    INFO(name);
    CHECK(run_raw(name, {ad, bd}, {a.data(), b.data()}, yd) == bits);
  }
  const std::vector<int64_t> ids = {0, 5, 0, 7}, pad = {0};
  CHECK(run_raw("equal", {{{4}, DType::i64}, {{}, DType::i64}}, {ids.data(), pad.data()}, {{4}, DType::bool_}) ==
        std::vector<uint8_t>{1, 0, 1, 0});
}

TEST_CASE("compare: logical and, or (broadcast) and not of bool bytes", "[kernels]") {
  const std::vector<uint8_t> a = {0, 1, 0, 1}, b = {1, 0};
  const TensorDesc ad{{2, 2}, DType::bool_}, bd{{1, 2}, DType::bool_};
  CHECK(run_raw("logical_and", {ad, bd}, {a.data(), b.data()}, ad) == std::vector<uint8_t>{0, 0, 0, 0});
  CHECK(run_raw("logical_or", {ad, bd}, {a.data(), b.data()}, ad) == std::vector<uint8_t>{1, 1, 1, 1});
  CHECK(run_raw("logical_not", {ad}, {a.data()}, ad) == std::vector<uint8_t>{1, 0, 1, 0});
}

TEST_CASE("cast: bool, i64 and f32 to one another, to bool x != 0 with a NaN true, to i64 truncated toward zero", "[kernels]") {
  const std::vector<uint8_t> mask = {1, 0, 1};
  const std::vector<uint8_t> as_f32 = run_raw("cast", {{{3}, DType::bool_}}, {mask.data()}, {{3}, DType::f32});
  std::vector<float> f(3);
  std::memcpy(f.data(), as_f32.data(), 12);
  CHECK(f == std::vector<float>{1.0f, 0.0f, 1.0f});
  const std::vector<float> x = {0.0f, -0.0f, NAN, 2.5f};
  CHECK(run_raw("cast", {{{4}, DType::f32}}, {x.data()}, {{4}, DType::bool_}) == std::vector<uint8_t>{0, 0, 1, 1});
  const std::vector<int64_t> ids = {3, -2};
  const std::vector<uint8_t> ids_f32 = run_raw("cast", {{{2}, DType::i64}}, {ids.data()}, {{2}, DType::f32});
  std::memcpy(f.data(), ids_f32.data(), 8);
  CHECK(f[0] == 3.0f);
  CHECK(f[1] == -2.0f);
  // torch's x.long(): toward zero; what C++ leaves undefined (NaN, infinities, beyond int64) is
  // INT64_MIN, as x86 (and torch there) gives it; -2^63 itself converts.
  const std::vector<float> reals = {2.9f, -2.9f, -0.5f, 16777216.0f, NAN, INFINITY, -INFINITY, 1e19f, -9.2233720e18f};
  const std::vector<uint8_t> as_i64 = run_raw("cast", {{{9}, DType::f32}}, {reals.data()}, {{9}, DType::i64});
  std::vector<int64_t> got(9);
  std::memcpy(got.data(), as_i64.data(), 72);
  CHECK(got == std::vector<int64_t>{2, -2, 0, 16777216, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN});
  CHECK_THROWS_WITH(make_kernel("cast", DeviceKind::cpu, DType::i64, KernelConfig{Attrs{}, {{{2}, DType::f32}}, {{{2}, DType::i32}}, "n"}),
                    Catch::Contains("cast: f32 to i32 is not supported"));
}

TEST_CASE("compare: mixed or unbroadcastable operands are refused", "[kernels]") {
  Attrs none;
  CHECK_THROWS_AS(make_kernel("greater", DeviceKind::cpu, DType::bool_,
                              KernelConfig{none, {{{2}, DType::f32}, {{2}, DType::i64}}, {{{2}, DType::bool_}}, "n"}),
                  Error);
  CHECK_THROWS_AS(make_kernel("less", DeviceKind::cpu, DType::bool_,
                              KernelConfig{none, {{{2}, DType::f32}, {{3}, DType::f32}}, {{{3}, DType::bool_}}, "n"}),
                  Error);
  CHECK_THROWS_AS(make_kernel("logical_and", DeviceKind::cpu, DType::bool_,
                              KernelConfig{none, {{{2}, DType::f32}, {{2}, DType::f32}}, {{{2}, DType::bool_}}, "n"}),
                  Error);
}

TEST_CASE("int64 add, sub and mul broadcast and wrap on overflow, clip_int clamps ids", "[kernels]") {
  const std::vector<int64_t> a = {1, -2, 3, INT64_MAX, 5, 6};  // [2, 3]
  const std::vector<int64_t> b = {10, 20, 30};                 // [3]
  const TensorDesc ad{{2, 3}, DType::i64}, bd{{3}, DType::i64};
  auto ints = [](const std::vector<uint8_t>& bytes) {
    std::vector<int64_t> v(bytes.size() / 8);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  };
  CHECK(ints(run_raw("add", {ad, bd}, {a.data(), b.data()}, ad)) == std::vector<int64_t>{11, 18, 33, INT64_MIN + 9, 25, 36});
  CHECK(ints(run_raw("sub", {ad, bd}, {a.data(), b.data()}, ad)) == std::vector<int64_t>{-9, -22, -27, INT64_MAX - 10, -15, -24});
  CHECK(ints(run_raw("mul", {ad, bd}, {a.data(), b.data()}, ad)) == std::vector<int64_t>{10, -40, 90, -10, 100, 180});
  // f32 with int64 is not one of them
  CHECK_THROWS(make_kernel("add", DeviceKind::cpu, DType::i64, KernelConfig{Attrs{}, {ad, {{3}, DType::f32}}, {ad}, "n"}));

  Attrs bounds;
  bounds.set_int("min", 0);
  bounds.set_int("max", 4);
  const std::vector<int64_t> ids = {-3, 0, 2, 4, 9, INT64_MIN};
  auto clip = make_kernel("clip_int", DeviceKind::cpu, DType::i64, KernelConfig{bounds, {{{6}, DType::i64}}, {{{6}, DType::i64}}, "n"});
  std::vector<int64_t> y(6);
  const void* in[] = {ids.data()};
  void* out[] = {y.data()};
  clip->run({}, in, out);
  CHECK(y == std::vector<int64_t>{0, 0, 2, 4, 4, 0});
  Attrs only_max;
  only_max.set_int("max", 2);
  make_kernel("clip_int", DeviceKind::cpu, DType::i64, KernelConfig{only_max, {{{6}, DType::i64}}, {{{6}, DType::i64}}, "n"})->run({}, in, out);
  CHECK(y == std::vector<int64_t>{-3, 0, 2, 2, 2, INT64_MIN});
  CHECK_THROWS_WITH(make_kernel("clip_int", DeviceKind::cpu, DType::i64, KernelConfig{bounds, {{{6}, DType::f32}}, {{{6}, DType::i64}}, "n"}),
                    Catch::Contains("clip_int"));
}

}  // namespace
}  // namespace of::kernels

TEST_CASE("mod and fmod of int64 ids take the divisor's and the dividend's sign, fmod of floats is std::fmod", "[kernels]") {
  using namespace of;
  using namespace of::kernels;
  const std::vector<int64_t> a = {7, -7, 7, -7, 5, INT64_MIN, 0, 9};
  const std::vector<int64_t> b = {3, 3, -3, -3, 0, -1, 4, 1};
  const Shape s{8};
  CHECK(testing::run_any<int64_t>("mod", DType::i64, {}, {s, s}, {a, b}, s) == std::vector<int64_t>{1, 2, -2, -1, 0, 0, 0, 0});
  CHECK(testing::run_any<int64_t>("fmod", DType::i64, {}, {s, s}, {a, b}, s) == std::vector<int64_t>{1, -1, 1, -1, 0, 0, 0, 0});
  // broadcast: the hashing trick's ids % buckets
  CHECK(testing::run_any<int64_t>("mod", DType::i64, {}, {{2, 3}, {}}, {{10, 11, 12, -1, 25, 3}, {5}}, {2, 3}) ==
        std::vector<int64_t>{0, 1, 2, 4, 0, 3});
  const std::vector<float> x = {5.5f, -5.5f, 5.5f, 1.0f}, y = {2.0f, 2.0f, -2.0f, 0.0f};
  const std::vector<float> r = testing::run_f32("fmod", {}, {{4}, {4}}, {x, y}, {4});
  CHECK(r[0] == 1.5f);
  CHECK(r[1] == -1.5f);
  CHECK(r[2] == 1.5f);
  CHECK(std::isnan(r[3]));
  CHECK_THROWS(testing::run_f32("mod", {}, {{4}, {4}}, {x, y}, {4}));  // mod of floats: no such kernel
}
