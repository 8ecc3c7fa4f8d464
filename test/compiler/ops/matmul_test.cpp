// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("matmul: 2-D", "[compiler]") {
  OneNode t(matmul_def(), {f32({8, 4}), f32({4, 3})});
  CHECK(t.shape() == Shape{8, 3});
  CHECK(t.kernel() == "matmul");
  CHECK(t.node().kernel_attrs.all().empty());
}

TEST_CASE("matmul: batch dims broadcast", "[compiler]") {
  CHECK(OneNode(matmul_def(), {f32({2, 1, 8, 4}), f32({3, 4, 5})}).shape() == Shape{2, 3, 8, 5});
  CHECK(OneNode(matmul_def(), {f32({8, 4}), f32({6, 4, 5})}).shape() == Shape{6, 8, 5});
}

TEST_CASE("matmul: 1-D operands are promoted and the added dim dropped", "[compiler]") {
  CHECK(OneNode(matmul_def(), {f32({4}), f32({4, 3})}).shape() == Shape{3});
  CHECK(OneNode(matmul_def(), {f32({8, 4}), f32({4})}).shape() == Shape{8});
  CHECK(OneNode(matmul_def(), {f32({4}), f32({4})}).shape() == Shape{});
  CHECK(OneNode(matmul_def(), {f32({4}), f32({2, 4, 3})}).shape() == Shape{2, 3});
}

TEST_CASE("matmul: rejects mismatched K", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(matmul_def(), {f32({8, 4}), f32({7, 3})}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(matmul_def(), {f32({8, 4}), f32({7, 3})}),
                      Catch::Contains("node 'MatMul_0' (MatMul)") &&
                          Catch::Contains("input 1 has shape [7,3], expected [4,*]"));
  REQUIRE_THROWS_WITH(OneNode(matmul_def(), {f32({8, 4}), f32({2, 7, 3})}), Catch::Contains("expected [*,4,*]"));
}

TEST_CASE("matmul: rejects batch dims that do not broadcast, and scalars", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(matmul_def(), {f32({2, 8, 4}), f32({3, 4, 5})}),
                      Catch::Contains("batch dimensions of inputs [2,8,4] and [3,4,5] do not broadcast (2 vs 3)"));
  REQUIRE_THROWS_WITH(OneNode(matmul_def(), {f32({}), f32({3})}), Catch::Contains("rank >= 1"));
}

}  // namespace of::compiler::test
