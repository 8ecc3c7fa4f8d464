// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("reduce: ReduceL2 by attribute (opset 13) or input (18) runs reduce_l2 over sorted axes", "[compiler]") {
  OneNode t(reduce_l2_def(), {f32({4, 2, 8})}, A().is("axes", {-1}).i("keepdims", 0));
  CHECK(t.shape() == Shape{4, 2});
  CHECK(t.kernel() == "reduce_l2");
  CHECK(t.node().kernel_attrs.get_ints("axes") == std::vector<int64_t>{2});
  CHECK(t.node().kernel_attrs.get_int("keepdims", -1) == 0);
  OneNode kept(reduce_l2_def(), {f32({4, 16}), const_i64({1})});
  CHECK(kept.shape() == Shape{4, 1});
  OneNode all(reduce_l2_def(), {f32({3, 5})}, A().i("keepdims", 0));
  CHECK(all.shape() == Shape{});
  CHECK(all.node().kernel_attrs.get_ints("axes") == std::vector<int64_t>{0, 1});
  REQUIRE_THROWS_WITH(OneNode(reduce_l2_def(), {f32({3, 5})}, A().is("axes", {1, -1})),
                      Catch::Contains("(ReduceL2)") && Catch::Contains("axes repeat an axis"));
}

}  // namespace of::compiler::test
