// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("unary: Relu, Sigmoid and Tanh keep the shape and pick their kernel", "[compiler]") {
  OneNode relu(relu_def(), {f32({2, 3})});
  CHECK(relu.shape() == Shape{2, 3});
  CHECK(relu.kernel() == "relu");
  CHECK(OneNode(sigmoid_def(), {f32({4})}).kernel() == "sigmoid");
  CHECK(OneNode(tanh_def(), {f32({})}).kernel() == "tanh");
}

TEST_CASE("unary: rejects non-f32 input and a second input", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(relu_def(), {typed({2}, DType::i32)}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(relu_def(), {typed({2}, DType::i32)}),
                      Catch::Contains("node 'Relu_0' (Relu)") && Catch::Contains("input 0 has dtype i32, only f32"));
  REQUIRE_THROWS_WITH(OneNode(tanh_def(), {f32({2}), f32({2})}), Catch::Contains("expects 1 inputs, has 2"));
}

}  // namespace of::compiler::test
