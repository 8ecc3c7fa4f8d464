// SPDX-License-Identifier: Apache-2.0
// OneHot (F.one_hot(ids, num_classes)): its shape and dtype, and what it refuses (its numbers
// against PyTorch: test/e2e/zoo.py's models focal and moe).
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("one hot: the depth joins the ids' shape at the axis, in the values' dtype", "[compiler]") {
  In depth = const_i64({5});
  depth.shape = {};
  const In values = const_i64({0, 1});
  OneNode last(one_hot_def(), {typed({4, 3}, DType::i64), depth, values}, A().i("axis", -1));
  CHECK(last.shape() == Shape{4, 3, 5});
  CHECK(last.out().dtype == DType::i64);
  CHECK(last.node().kernel_attrs.get_int("axis", -1) == 2);
  CHECK(OneNode(one_hot_def(), {typed({4, 3}, DType::i64), depth, values}, A().i("axis", 1)).shape() == Shape{4, 5, 3});
}

TEST_CASE("one hot: a depth known only at run time, other int64 values and float ids are refused", "[compiler]") {
  In depth = const_i64({5});
  depth.shape = {};
  REQUIRE_THROWS_WITH(OneNode(one_hot_def(), {typed({4}, DType::i64), typed({}, DType::i64), const_i64({0, 1})}),
                      Catch::Contains("(OneHot)") && Catch::Contains("num_classes"));
  REQUIRE_THROWS_WITH(OneNode(one_hot_def(), {typed({4}, DType::i64), depth, const_i64({1, 2})}),
                      Catch::Contains("int64 values [1, 2] are not supported"));
  REQUIRE_THROWS_WITH(OneNode(one_hot_def(), {f32({4}), depth, const_i64({0, 1})}), Catch::Contains("expected int64"));
}

}  // namespace of::compiler::test
