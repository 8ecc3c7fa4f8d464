// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("conv_transpose: torch's output size, run as conv_grad_data with the 2-D attributes", "[compiler]") {
  // nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1) on [4,16,4,4]: (4-1)*2 - 2 + 2 + 1 + 1.
  OneNode t(conv_transpose_def(), {f32({4, 16, 4, 4}), f32({16, 8, 3, 3}), f32({8})},
            A().is("strides", {2, 2}).is("pads", {1, 1, 1, 1}).is("output_padding", {1, 1}));
  CHECK(t.shape() == Shape{4, 8, 8, 8});
  CHECK(t.kernel() == "conv_grad_data");
  CHECK(t.ints("strides") == std::vector<int64_t>{2, 2});
  CHECK(t.ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  // Groups: W [C, M/group, k, k] gives M = 2 x 4.
  OneNode g(conv_transpose_def(), {f32({1, 16, 8, 8}), f32({16, 4, 2, 2})}, A().is("strides", {2, 2}).i("group", 2));
  CHECK(g.shape() == Shape{1, 8, 16, 16});
  // 1-D: height 1 for the kernels.
  OneNode d(conv_transpose_def(), {f32({4, 8, 256}), f32({8, 4, 3})}, A().is("strides", {2}));
  CHECK(d.shape() == Shape{4, 4, 513});
  CHECK(d.ints("strides") == std::vector<int64_t>{1, 2});
  CHECK(d.ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
}

TEST_CASE("conv_transpose: refuses output_shape, auto_pad, an output_padding not below the stride and mismatched weights",
          "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(conv_transpose_def(), {f32({1, 4, 4, 4}), f32({4, 2, 3, 3})}, A().is("output_shape", {8, 8})),
                      Catch::Contains("node 'ConvTranspose_0' (ConvTranspose)") && Catch::Contains("output_shape is not supported"));
  REQUIRE_THROWS_WITH(OneNode(conv_transpose_def(), {f32({1, 4, 4, 4}), f32({4, 2, 3, 3})}, A().s("auto_pad", "SAME_UPPER")),
                      Catch::Contains("auto_pad = 'SAME_UPPER' is not supported"));
  REQUIRE_THROWS_WITH(OneNode(conv_transpose_def(), {f32({1, 4, 4, 4}), f32({4, 2, 3, 3})}, A().is("strides", {2, 2}).is("output_padding", {2, 0})),
                      Catch::Contains("output_padding 2 must be below the stride 2"));
  REQUIRE_THROWS_WITH(OneNode(conv_transpose_def(), {f32({1, 4, 4, 4}), f32({3, 2, 3, 3})}), Catch::Contains("the input's channels"));
  REQUIRE_THROWS_WITH(OneNode(conv_transpose_def(), {f32({1, 4, 4, 4}), f32({4, 2, 3, 3}), f32({3})}), Catch::Contains("input 2 (bias)"));
}

}  // namespace of::compiler::test
