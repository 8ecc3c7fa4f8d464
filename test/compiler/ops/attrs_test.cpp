// SPDX-License-Identifier: Apache-2.0
// check_attrs: every attribute an op reads is refused, naming node, op and attribute, when it is
// outside what ONNX allows (booleans other than 0 or 1, non-positive strides, NaN floats, an
// attribute of the wrong type) instead of being read as something else.
#include <catch2/catch.hpp>

#include <limits>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("attrs: Gemm transA and transB must be 0 or 1", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({2, 4}), f32({3, 4})}, A().i("transB", 7)),
                      "node 'Gemm_0' (Gemm): attribute transB = 7 must be 0 or 1");
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({4, 2}), f32({4, 3})}, A().i("transA", -1)),
                      "node 'Gemm_0' (Gemm): attribute transA = -1 must be 0 or 1");
  CHECK(OneNode(gemm_def(), {f32({2, 4}), f32({3, 4})}, A().i("transB", 1)).shape() == Shape{2, 3});
}

TEST_CASE("attrs: non-finite floats are refused", "[compiler]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({2, 4}), f32({4, 3})}, A().f("alpha", nan)),
                      "node 'Gemm_0' (Gemm): attribute alpha = nan must be a finite number");
  REQUIRE_THROWS_WITH(OneNode(leaky_relu_def(), {f32({2, 4})}, A().f("alpha", inf)),
                      "node 'LeakyRelu_0' (LeakyRelu): attribute alpha = inf must be a finite number");
  REQUIRE_THROWS_WITH(OneNode(hard_sigmoid_def(), {f32({2, 4})}, A().f("beta", -inf)),
                      Catch::Contains("attribute beta = -inf must be a finite number"));
  REQUIRE_THROWS_WITH(OneNode(layer_norm_def(), {f32({2, 4}), f32({4})}, A().f("epsilon", -1.0f)),
                      "node 'LayerNormalization_0' (LayerNormalization): attribute epsilon = -1 must be >= 0");
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), {f32({2, 3}), f32({3}), f32({3}), f32({3}), f32({3})}, A().f("momentum", 2.0f)),
                      Catch::Contains("attribute momentum = 2 must be in [0, 1]"));
}

TEST_CASE("attrs: window attributes must be positive and bounded", "[compiler]") {
  const In x = f32({1, 1, 8, 8}), w = f32({1, 1, 3, 3});
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {x, w}, A().is("strides", {1, 0})),
                      "node 'Conv_0' (Conv): attribute strides = [1,0] must hold values >= 1");
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {x, w}, A().is("pads", {0, -1, 0, 0})),
                      "node 'Conv_0' (Conv): attribute pads = [0,-1,0,0] must hold values >= 0");
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {x, w}, A().is("dilations", {int64_t(1) << 40, 1})),
                      Catch::Contains("attribute dilations = [1099511627776,1] must hold values in [1, 2147483648]"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {x, w}, A().i("group", 0)), Catch::Contains("attribute group = 0 must be >= 1"));
  REQUIRE_THROWS_WITH(OneNode(max_pool_def(), {x}, A().is("kernel_shape", {2, 2}).i("ceil_mode", 2)),
                      "node 'MaxPool_0' (MaxPool): attribute ceil_mode = 2 must be 0 or 1");
  REQUIRE_THROWS_WITH(OneNode(average_pool_def(), {x}, A().is("kernel_shape", {2, 2}).i("count_include_pad", 3)),
                      Catch::Contains("attribute count_include_pad = 3 must be 0 or 1"));
  REQUIRE_THROWS_WITH(OneNode(max_pool_def(), {x}, A().is("kernel_shape", {0, 2})),
                      Catch::Contains("attribute kernel_shape = [0,2] must hold values >= 1"));
}

TEST_CASE("attrs: an attribute of the wrong type is refused", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({2, 4}), f32({3, 4})}, A().f("transB", 1.0f)),
                      "node 'Gemm_0' (Gemm): attribute transB must be one integer");
  REQUIRE_THROWS_WITH(OneNode(gemm_def(), {f32({2, 4}), f32({4, 3})}, A().i("alpha", 2)),
                      "node 'Gemm_0' (Gemm): attribute alpha must be one float");
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 1, 8, 8}), f32({1, 1, 3, 3})}, A().s("strides", "1,1")),
                      "node 'Conv_0' (Conv): attribute strides must be a list of integers");
  REQUIRE_THROWS_WITH(OneNode(reshape_def(), {f32({2, 4}), const_i64({4, 2})}, A().f("allowzero", 1.5f)),
                      "node 'Reshape_0' (Reshape): attribute allowzero must be one integer");
}

TEST_CASE("attrs: booleans of reductions and reshapes", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(reduce_mean_def(), {f32({2, 4})}, A().i("keepdims", 2)),
                      "node 'ReduceMean_0' (ReduceMean): attribute keepdims = 2 must be 0 or 1");
  REQUIRE_THROWS_WITH(OneNode(reduce_mean_def(), {f32({2, 4})}, A().i("noop_with_empty_axes", -3)),
                      Catch::Contains("attribute noop_with_empty_axes = -3 must be 0 or 1"));
  REQUIRE_THROWS_WITH(OneNode(reshape_def(), {f32({2, 4}), const_i64({4, 2})}, A().i("allowzero", 5)),
                      "node 'Reshape_0' (Reshape): attribute allowzero = 5 must be 0 or 1");
}

TEST_CASE("attrs: axes out of range name the attribute", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(softmax_def(), {f32({2, 4})}, A().i("axis", 5)),
                      "node 'Softmax_0' (Softmax): attribute axis 5 is out of range for rank 2");
  REQUIRE_THROWS_WITH(OneNode(concat_def(), {f32({2}), f32({2})}, A().i("axis", -2)),
                      "node 'Concat_0' (Concat): attribute axis -2 is out of range for rank 1");
  REQUIRE_THROWS_WITH(OneNode(flatten_def(), {f32({2, 4})}, A().i("axis", 3)),
                      Catch::Contains("node 'Flatten_0' (Flatten): attribute axis 3 is out of range [-2, 2]"));
  REQUIRE_THROWS_WITH(OneNode(softmax_def(), {f32({2, 4})}, A().i("axis", int64_t(1) << 40)),
                      "node 'Softmax_0' (Softmax): attribute axis = 1099511627776 must be in [-64, 64]");
}

TEST_CASE("attrs: Split num_outputs must match the outputs", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(split_def(), {f32({4, 2})}, A().i("num_outputs", 3), 2),
                      "node 'Split_0' (Split): attribute num_outputs = 3 but the node has 2 outputs");
  CHECK(OneNode(split_def(), {f32({4, 2})}, A().i("num_outputs", 2), 2).shape(1) == Shape{2, 2});
}

}  // namespace of::compiler::test
