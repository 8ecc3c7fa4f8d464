// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "compiler/ops/window.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("conv: explicit pads and strides give the ONNX output shape", "[compiler]") {
  OneNode t(conv_def(), {f32({2, 3, 32, 32}), f32({8, 3, 3, 3}), f32({8})},
            A().is("pads", {1, 1, 1, 1}).is("strides", {2, 2}));
  CHECK(t.shape() == Shape{2, 8, 16, 16});
  CHECK(t.kernel() == "conv");
  CHECK(t.ints("strides") == std::vector<int64_t>{2, 2});
  CHECK(t.ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(t.ints("dilations") == std::vector<int64_t>{1, 1});
  CHECK(t.int_attr("group") == 1);
  CHECK(t.node().runtime_inputs.size() == 3);
}

TEST_CASE("conv: auto_pad SAME_UPPER resolves to explicit pads, extra at the end", "[compiler]") {
  // in 7, k 4, s 2 -> out ceil(7/2) = 4, total pad (4-1)*2 + 4 - 7 = 3 -> begin 1, end 2.
  OneNode t(conv_def(), {f32({1, 2, 7, 7}), f32({4, 2, 4, 4})},
            A().s("auto_pad", "SAME_UPPER").is("strides", {2, 2}));
  CHECK(t.shape() == Shape{1, 4, 4, 4});
  CHECK(t.ints("pads") == std::vector<int64_t>{1, 1, 2, 2});
}

TEST_CASE("conv: auto_pad SAME_LOWER puts the extra pad at the beginning", "[compiler]") {
  OneNode t(conv_def(), {f32({1, 2, 7, 7}), f32({4, 2, 4, 4})},
            A().s("auto_pad", "SAME_LOWER").is("strides", {2, 2}));
  CHECK(t.shape() == Shape{1, 4, 4, 4});
  CHECK(t.ints("pads") == std::vector<int64_t>{2, 2, 1, 1});
}

TEST_CASE("conv: auto_pad VALID, dilation and groups", "[compiler]") {
  // Effective kernel (3-1)*2+1 = 5: 10 - 5 + 1 = 6.
  OneNode t(conv_def(), {f32({1, 4, 10, 10}), f32({6, 2, 3, 3})},
            A().s("auto_pad", "VALID").is("dilations", {2, 2}).i("group", 2));
  CHECK(t.shape() == Shape{1, 6, 6, 6});
  CHECK(t.ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(t.ints("dilations") == std::vector<int64_t>{2, 2});
  CHECK(t.int_attr("group") == 2);
}

TEST_CASE("conv: an absent optional bias is not read at run time", "[compiler]") {
  OneNode t(conv_def(), {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), absent()});
  CHECK(t.shape() == Shape{1, 4, 6, 6});
  CHECK(t.node().runtime_inputs.size() == 2);
}

TEST_CASE("conv: 1-D (nn.Conv1d) lowers as the 2-D kernel of height 1", "[compiler]") {
  OneNode t(conv_def(), {f32({2, 3, 10}), f32({4, 3, 3}), f32({4})}, A().is("strides", {2}).is("pads", {1, 2}).is("dilations", {1}));
  CHECK(t.shape() == Shape{2, 4, 6});  // (10 + 1 + 2 - 3) / 2 + 1
  CHECK(t.kernel() == "conv");
  CHECK(t.ints("strides") == std::vector<int64_t>{1, 2});
  CHECK(t.ints("pads") == std::vector<int64_t>{0, 1, 0, 2});
  CHECK(t.ints("dilations") == std::vector<int64_t>{1, 1});
}

TEST_CASE("conv: 3-D (nn.Conv3d) lowers with three axes of attributes, its bias gradient sums N, D, H, W", "[compiler]") {
  OneNode t(conv_def(), {f32({2, 3, 5, 9, 8}), f32({4, 3, 3, 7, 7}), f32({4})},
            A().is("strides", {1, 2, 2}).is("pads", {1, 3, 3, 1, 3, 2}).is("dilations", {1, 1, 1}));
  CHECK(t.shape() == Shape{2, 4, 5, 5, 4});  // (5+2-3)/1+1, (9+6-7)/2+1, (8+5-7)/2+1
  CHECK(t.kernel() == "conv");
  CHECK(t.ints("strides") == std::vector<int64_t>{1, 2, 2});
  CHECK(t.ints("pads") == std::vector<int64_t>{1, 3, 3, 1, 3, 2});
  CHECK(t.ints("dilations") == std::vector<int64_t>{1, 1, 1});
  CHECK(batch_and_spatial_axes(5) == std::vector<int64_t>{0, 2, 3, 4});
  OneNode same(conv_def(), {f32({1, 2, 4, 5, 6}), f32({3, 2, 3, 3, 3})}, A().s("auto_pad", "SAME_UPPER").is("strides", {2, 1, 2}));
  CHECK(same.shape() == Shape{1, 3, 2, 5, 3});
  CHECK(same.ints("pads") == std::vector<int64_t>{0, 1, 0, 1, 1, 1});
}

TEST_CASE("conv: rejects 4-D convolution, and a weight of another rank than the input", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 4, 4, 4, 4}), f32({4, 3, 3, 3, 3, 3})}),
                      Catch::Contains("node 'Conv_0' (Conv)") && Catch::Contains("only 1-D, 2-D and 3-D convolution is supported"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 10}), f32({4, 3, 3, 3})}), Catch::Contains("expected rank 3 [M,C/group,kernel...]"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3})}, A().is("pads", {1, 1, 1, 1})),
                      Catch::Contains("attribute pads has 4 values, expected 6"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 10}), f32({4, 3, 3})}, A().is("strides", {1, 1})),
                      Catch::Contains("attribute strides has 2 values, expected 1"));
}

TEST_CASE("conv: rejects a weight whose channels do not match input channels / group", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 4, 8, 8}), f32({6, 4, 3, 3})}, A().i("group", 2)),
                      Catch::Contains("node 'Conv_0'") &&
                          Catch::Contains("input 1 (weight) has shape [6,4,3,3], expected [*,2,...]"));
}

TEST_CASE("conv: rejects output channels not divisible by group and a wrong bias", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 4, 8, 8}), f32({5, 2, 3, 3})}, A().i("group", 2)),
                      Catch::Contains("5 output channels, not divisible by group 2"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({3})}),
                      Catch::Contains("input 2 (bias) has shape [3], expected [4]"));
}

TEST_CASE("conv: rejects a kernel_shape that disagrees with the weight and a window larger than the input",
          "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, A().is("kernel_shape", {5, 5})),
                      Catch::Contains("kernel_shape = [5,5] does not match"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 2, 8}), f32({4, 3, 3, 3})}),
                      Catch::Contains("padded input size 2") && Catch::Contains("smaller than the window 3"));
}

TEST_CASE("conv: rejects an unknown auto_pad", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, A().s("auto_pad", "SAME")),
                      Catch::Contains("auto_pad = 'SAME' is not one of"));
  REQUIRE_THROWS_WITH(OneNode(conv_def(), {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                              A().s("auto_pad", "VALID").is("pads", {1, 1, 1, 1})),
                      Catch::Contains("pads = [1,1,1,1] and auto_pad = VALID are both set"));
}

}  // namespace of::compiler::test
