// SPDX-License-Identifier: Apache-2.0
// ScatterElements and of.GatherElements: shapes, kernels and modes, and the scatters refused
// because an element could be written twice without a reduction (their numbers against PyTorch:
// test/e2e/zoo.py's model scatter).
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

namespace {

In ids(const std::vector<int64_t>& v, Shape shape) {
  In in = const_i64(v);
  in.shape = std::move(shape);
  return in;
}

}  // namespace

TEST_CASE("scatter elements: reduction add or one index per line runs, kernel modes add and set", "[compiler]") {
  OneNode add(scatter_elements_def(), {f32({4, 6}), typed({4, 3}, DType::i64), f32({4, 3})}, A().i("axis", 1).s("reduction", "add"));
  CHECK(add.kernel() == "scatter_elements");
  CHECK(add.shape() == Shape{4, 6});
  CHECK(add.int_attr("mode") == 1);
  CHECK(add.int_attr("axis") == 1);
  // a one-hot of run-time labels: zeros.scatter_(1, labels[:, None], 1)
  OneNode one_hot(scatter_elements_def(), {f32({4, 10}), typed({4, 1}, DType::i64), f32({4, 1})}, A().i("axis", -1));
  CHECK(one_hot.int_attr("mode") == 0);
  CHECK(one_hot.int_attr("axis") == 1);
  // constant indices that never repeat in a line
  CHECK(OneNode(scatter_elements_def(), {f32({2, 6}), ids({0, 5, 1, 2}, {2, 2}), f32({2, 2})}, A().i("axis", 1)).int_attr("mode") == 0);
}

TEST_CASE("scatter elements: indices that may repeat without a reduction, other reductions and bad shapes are refused", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(scatter_elements_def(), {f32({4, 6}), typed({4, 3}, DType::i64), f32({4, 3})}, A().i("axis", 1)),
                      Catch::Contains("(ScatterElements)") && Catch::Contains("may name one element twice") &&
                          Catch::Contains("opset_version=16"));
  REQUIRE_THROWS_WITH(OneNode(scatter_elements_def(), {f32({2, 6}), ids({0, 5, 2, -4}, {2, 2}), f32({2, 2})}, A().i("axis", 1)),
                      Catch::Contains("may name one element twice"));  // -4 is 2 in a line of 6
  REQUIRE_THROWS_WITH(OneNode(scatter_elements_def(), {f32({4, 6}), typed({4, 1}, DType::i64), f32({4, 1})}, A().i("axis", 1).s("reduction", "mul")),
                      Catch::Contains("reduction = 'mul' is not supported"));
  REQUIRE_THROWS_WITH(OneNode(scatter_elements_def(), {f32({4, 6}), typed({4, 1}, DType::i64), f32({4, 2})}, A().i("axis", 1)),
                      Catch::Contains("input 2 (updates) has shape [4,2], expected the indices' [4,1]"));
  REQUIRE_THROWS_WITH(OneNode(scatter_elements_def(), {f32({4, 6}), typed({5, 1}, DType::i64), f32({5, 1})}, A().i("axis", 1)),
                      Catch::Contains("indices [5,1] exceed data [4,6] on axis 0"));
}

TEST_CASE("gather elements: run-time indices become of.GatherElements, kernel gather_elements", "[compiler]") {
  OneNode t(gather_elements_kernel_def(), {f32({4, 6}), typed({4, 2}, DType::i32)}, A().i("axis", 1));
  CHECK(t.kernel() == "gather_elements");
  CHECK(t.shape() == Shape{4, 2});
  CHECK(t.int_attr("axis") == 1);
}

}  // namespace of::compiler::test
