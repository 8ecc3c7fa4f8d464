// SPDX-License-Identifier: Apache-2.0
// TopK (torch.topk, torch.sort): values and int64 positions of k along the axis, the kernel's
// attributes, and what it refuses (its numbers against PyTorch: test/e2e/zoo.py's model moe).
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("topk: k along the axis, values f32 and positions int64, largest or smallest", "[compiler]") {
  OneNode t(topk_def(), {f32({4, 10, 3}), const_i64({2})}, A().i("axis", 1).i("largest", 0), 2);
  CHECK(t.shape(0) == Shape{4, 2, 3});
  CHECK(t.out(1).dtype == DType::i64);
  CHECK(t.kernel() == "topk");
  CHECK(t.int_attr("axis") == 1);
  CHECK(t.int_attr("k") == 2);
  CHECK(t.int_attr("largest") == 0);
  CHECK(OneNode(topk_def(), {f32({4, 10}), const_i64({10})}, {}, 2).shape(1) == Shape{4, 10});  // torch.sort: the whole axis
}

TEST_CASE("topk: k outside the axis or known only at run time is refused, naming the node", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(topk_def(), {f32({4, 10}), const_i64({11})}, {}, 2),
                      Catch::Contains("(TopK)") && Catch::Contains("k = 11 is outside [1, 10]"));
  REQUIRE_THROWS_WITH(OneNode(topk_def(), {f32({4, 10}), typed({1}, DType::i64)}, {}, 2), Catch::Contains("must be a constant int64"));
}

}  // namespace of::compiler::test
