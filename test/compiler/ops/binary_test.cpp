// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("binary: Add broadcasts numpy-style", "[compiler]") {
  OneNode t(add_def(), {f32({2, 1, 4}), f32({3, 1})});
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.kernel() == "add");
  CHECK(OneNode(div_def(), {f32({}), f32({5})}).kernel() == "div");
}

TEST_CASE("binary: Max and Min of two inputs broadcast, of three are refused by node", "[compiler]") {
  OneNode mx(max_def(), {f32({4, 1}), f32({3})});
  CHECK(mx.shape() == Shape{4, 3});
  CHECK(mx.kernel() == "max");
  CHECK(OneNode(min_def(), {f32({2}), f32({2})}).kernel() == "min");
  REQUIRE_THROWS_WITH(OneNode(max_def(), {f32({2}), f32({2}), f32({2})}),
                      Catch::Contains("(Max)") && Catch::Contains("Max of 3 inputs: only two are supported"));
}

TEST_CASE("binary: PRelu's slope broadcasts to the input one way only", "[compiler]") {
  OneNode t(prelu_def(), {f32({4, 8, 5, 5}), f32({8, 1, 1})});
  CHECK(t.shape() == Shape{4, 8, 5, 5});
  CHECK(t.kernel() == "prelu");
  CHECK(OneNode(prelu_def(), {f32({4, 16}), f32({1})}).shape() == Shape{4, 16});
  REQUIRE_THROWS_WITH(OneNode(prelu_def(), {f32({4, 1}), f32({4, 8})}),
                      Catch::Contains("(PRelu)") && Catch::Contains("slope [4,8] does not broadcast to input [4,1]"));
}

TEST_CASE("binary: Add, Sub and Mul of int64 ids give int64, other mixes are refused", "[compiler]") {
  OneNode shifted(add_def(), {typed({4, 3}, DType::i64), const_i64({4})});
  CHECK(shifted.out().dtype == DType::i64);
  CHECK(shifted.shape() == Shape{4, 3});
  CHECK(shifted.kernel() == "add");
  CHECK(OneNode(mul_def(), {typed({4}, DType::i64), typed({4}, DType::i64)}).kernel() == "mul");
  REQUIRE_THROWS_WITH(OneNode(div_def(), {typed({4}, DType::i64), typed({4}, DType::i64)}), Catch::Contains("(Div)") && Catch::Contains("i64"));
  REQUIRE_THROWS_WITH(OneNode(add_def(), {typed({4}, DType::i64), f32({4})}), Catch::Contains("(Add)") && Catch::Contains("i64"));
}

TEST_CASE("mod: int64 remainders run kernel mod or fmod, floats fmod only", "[compiler]") {
  OneNode hashed(mod_def(), {typed({4, 3}, DType::i64), const_i64({12})});
  CHECK(hashed.out().dtype == DType::i64);
  CHECK(hashed.shape() == Shape{4, 3});
  CHECK(hashed.kernel() == "mod");
  CHECK(OneNode(mod_def(), {typed({4}, DType::i64), typed({4}, DType::i64)}, A().i("fmod", 1)).kernel() == "fmod");
  OneNode sawtooth(mod_def(), {f32({4, 3}), f32({3})}, A().i("fmod", 1));
  CHECK(sawtooth.kernel() == "fmod");
  CHECK(sawtooth.out().dtype == DType::f32);
  REQUIRE_THROWS_WITH(OneNode(mod_def(), {f32({4}), f32({4})}), Catch::Contains("(Mod): fmod = 0 on floats"));
  REQUIRE_THROWS_WITH(OneNode(mod_def(), {typed({4}, DType::i64), f32({4})}), Catch::Contains("(Mod)"));
}

TEST_CASE("clip: int64 ids take int64 bounds and kernel clip_int", "[compiler]") {
  OneNode ids(clip_def(), {typed({4}, DType::i64), absent(), const_i64({7})});
  CHECK(ids.kernel() == "clip_int");
  CHECK(ids.out().dtype == DType::i64);
  CHECK(ids.int_attr("max") == 7);
  CHECK_FALSE(ids.node().kernel_attrs.has("min"));
  REQUIRE_THROWS_WITH(OneNode(clip_def(), {typed({4}, DType::i64), absent(), f32({})}),
                      Catch::Contains("(Clip)") && Catch::Contains("constant int64 scalar"));
}

TEST_CASE("binary: a broadcast failure names the node and both shapes", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(mul_def(), {f32({2, 3}), f32({4})}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(mul_def(), {f32({2, 3}), f32({4})}),
                      Catch::Contains("node 'Mul_0' (Mul)") &&
                          Catch::Contains("shapes [2,3] and [4] do not broadcast (axis 1: 3 vs 4)"));
}

}  // namespace of::compiler::test
