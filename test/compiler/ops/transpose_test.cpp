// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("transpose: explicit perm", "[compiler]") {
  OneNode t(transpose_def(), {f32({2, 3, 4})}, A().is("perm", {0, 2, 1}));
  CHECK(t.shape() == Shape{2, 4, 3});
  CHECK(t.kernel() == "transpose");
  CHECK(t.ints("perm") == std::vector<int64_t>{0, 2, 1});
}

TEST_CASE("transpose: default perm reverses the dims, any dtype", "[compiler]") {
  OneNode t(transpose_def(), {typed({2, 3, 4}, DType::i64)});
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK(t.out().dtype == DType::i64);
  CHECK(t.ints("perm") == std::vector<int64_t>{2, 1, 0});
}

TEST_CASE("transpose: rejects a perm that is not a permutation", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(transpose_def(), {f32({2, 3, 4})}, A().is("perm", {0, 1, 1})), of::Error);
  REQUIRE_THROWS_WITH(OneNode(transpose_def(), {f32({2, 3, 4})}, A().is("perm", {0, 1, 1})),
                      Catch::Contains("node 'Transpose_0' (Transpose)") &&
                          Catch::Contains("perm = [0,1,1] is not a permutation of 0..2"));
  REQUIRE_THROWS_WITH(OneNode(transpose_def(), {f32({2, 3, 4})}, A().is("perm", {1, 0})),
                      Catch::Contains("not a permutation"));
}

}  // namespace of::compiler::test
