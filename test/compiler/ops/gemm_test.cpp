// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("gemm: transB with a row-vector C", "[compiler]") {
  OneNode t(gemm_def(), {f32({64, 784}), f32({128, 784}), f32({128})}, A().i("transB", 1).f("alpha", 0.5f));
  CHECK(t.shape() == Shape{64, 128});
  CHECK(t.kernel() == "gemm");
  CHECK(t.float_attr("alpha") == 0.5f);
  CHECK(t.float_attr("beta") == 1.0f);
  CHECK(t.int_attr("trans_a") == 0);
  CHECK(t.int_attr("trans_b") == 1);
}

TEST_CASE("gemm: transA, no C", "[compiler]") {
  OneNode t(gemm_def(), {f32({3, 5}), f32({3, 4})}, A().i("transA", 1));
  CHECK(t.shape() == Shape{5, 4});
  CHECK(t.int_attr("trans_a") == 1);
  CHECK(t.node().runtime_inputs.size() == 2);
}

TEST_CASE("gemm: C of shape Mx1 and a scalar C broadcast", "[compiler]") {
  CHECK(OneNode(gemm_def(), {f32({2, 3}), f32({3, 4}), f32({2, 1})}).shape() == Shape{2, 4});
  CHECK(OneNode(gemm_def(), {f32({2, 3}), f32({3, 4}), f32({})}).shape() == Shape{2, 4});
}

TEST_CASE("gemm: rejects mismatched K", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(gemm_def(), {f32({8, 4}), f32({7, 3})}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({8, 4}), f32({7, 3})}),
                      Catch::Contains("node 'Gemm_0' (Gemm)") &&
                          Catch::Contains("input 1 (B) has shape [7,3], expected [4,*]"));
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({8, 4}), f32({7, 3})}, A().i("transB", 1)),
                      Catch::Contains("expected [*,4]"));
}

TEST_CASE("gemm: rejects a C that does not broadcast and a 3-D A", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({2, 3}), f32({3, 4}), f32({3})}),
                      Catch::Contains("input 2 (C) has shape [3], which does not broadcast to the output [M,N] = [2,4]"));
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({2, 2, 3}), f32({3, 4})}),
                      Catch::Contains("input 0 (A) has shape [2,2,3], expected rank 2"));
}

}  // namespace of::compiler::test
