// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("concat: sums the axis dim and normalizes a negative axis", "[compiler]") {
  OneNode t(concat_def(), {f32({2, 3, 4}), f32({2, 5, 4}), f32({2, 1, 4})}, A().i("axis", -2));
  CHECK(t.shape() == Shape{2, 9, 4});
  CHECK(t.kernel() == "concat");
  CHECK(t.int_attr("axis") == 1);
}

TEST_CASE("concat: any dtype, one input", "[compiler]") {
  OneNode t(concat_def(), {typed({3}, DType::i64)}, A().i("axis", 0));
  CHECK(t.shape() == Shape{3});
  CHECK(t.out().dtype == DType::i64);
}

TEST_CASE("concat: rejects mismatched dims, dtypes and a missing axis", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(concat_def(), {f32({2, 3, 4}), f32({2, 5, 6})}, A().i("axis", 1)), of::Error);
  REQUIRE_THROWS_WITH(OneNode(concat_def(), {f32({2, 3, 4}), f32({2, 5, 6})}, A().i("axis", 1)),
                      Catch::Contains("node 'Concat_0' (Concat)") &&
                          Catch::Contains("input 1 has shape [2,5,6], expected [2,*,4]"));
  REQUIRE_THROWS_WITH(OneNode(concat_def(), {f32({2, 3}), f32({2})}, A().i("axis", 0)),
                      Catch::Contains("input 1 has shape [2], expected [*,3]"));
  REQUIRE_THROWS_WITH(OneNode(concat_def(), {f32({2}), typed({2}, DType::i32)}, A().i("axis", 0)),
                      Catch::Contains("input 1 has dtype i32, expected f32"));
  REQUIRE_THROWS_WITH(OneNode(concat_def(), {f32({2}), f32({2})}), Catch::Contains("attribute axis is required"));
}

}  // namespace of::compiler::test
