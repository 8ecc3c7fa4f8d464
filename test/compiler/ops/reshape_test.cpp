// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("reshape: 0 copies a dim, -1 is inferred, only input 0 is read at run time", "[compiler]") {
  OneNode t(reshape_def(), {f32({2, 3, 4}), const_i64({0, -1})});
  CHECK(t.shape() == Shape{2, 12});
  CHECK(t.kernel() == "copy");
  CHECK(t.node().runtime_inputs == std::vector<ValueId>{t.node().inputs[0]});
}

TEST_CASE("reshape: keeps the dtype and honours allowzero", "[compiler]") {
  OneNode t(reshape_def(), {typed({0, 3}, DType::i64), const_i64({3, 0})}, A().i("allowzero", 1));
  CHECK(t.shape() == Shape{3, 0});
  CHECK(t.out().dtype == DType::i64);
}

TEST_CASE("reshape: rejects mismatched element counts, two -1 and a non-constant shape", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(reshape_def(), {f32({2, 3}), const_i64({4, 2})}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(reshape_def(), {f32({2, 3}), const_i64({4, 2})}),
                      Catch::Contains("node 'Reshape_0' (Reshape)") &&
                          Catch::Contains("cannot reshape input 0 [2,3] (6 elements) to [4,2] (8 elements)"));
  REQUIRE_THROWS_WITH(OneNode(reshape_def(), {f32({2, 3}), const_i64({4, -1})}),
                      Catch::Contains("no size for the -1 fits"));
  REQUIRE_THROWS_WITH(OneNode(reshape_def(), {f32({2, 3}), const_i64({-1, -1})}),
                      Catch::Contains("more than one -1"));
  REQUIRE_THROWS_WITH(OneNode(reshape_def(), {f32({2, 3}), typed({2}, DType::i64)}),
                      Catch::Contains("input 1 must be a constant"));
}

TEST_CASE("flatten: default axis 1, negative axis and axis = rank", "[compiler]") {
  OneNode t(flatten_def(), {f32({2, 3, 4})});
  CHECK(t.shape() == Shape{2, 12});
  CHECK(t.kernel() == "copy");
  CHECK(OneNode(flatten_def(), {f32({2, 3, 4})}, A().i("axis", -1)).shape() == Shape{6, 4});
  CHECK(OneNode(flatten_def(), {f32({2, 3, 4})}, A().i("axis", 0)).shape() == Shape{1, 24});
  CHECK(OneNode(flatten_def(), {typed({2, 3, 4}, DType::u8)}, A().i("axis", 3)).shape() == Shape{24, 1});
}

TEST_CASE("flatten: rejects an axis out of range", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(flatten_def(), {f32({2, 3})}, A().i("axis", 3)),
                      Catch::Contains("node 'Flatten_0' (Flatten)") && Catch::Contains("axis 3 is out of range [-2, 2]"));
}

TEST_CASE("identity: copies shape and dtype", "[compiler]") {
  OneNode t(identity_def(), {typed({5, 2}, DType::i32)});
  CHECK(t.shape() == Shape{5, 2});
  CHECK(t.out().dtype == DType::i32);
  CHECK(t.kernel() == "copy");
}

TEST_CASE("identity: rejects two inputs", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(identity_def(), {f32({2}), f32({2})}),
                      Catch::Contains("node 'Identity_0'") && Catch::Contains("expects 1 inputs, has 2"));
}

}  // namespace of::compiler::test
