// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("max_pool: floor output size and normalized attributes", "[compiler]") {
  OneNode t(max_pool_def(), {f32({1, 3, 5, 5})}, A().is("kernel_shape", {2, 2}).is("strides", {2, 2}));
  CHECK(t.shape() == Shape{1, 3, 2, 2});
  CHECK(t.kernel() == "max_pool");
  CHECK(t.ints("kernel_shape") == std::vector<int64_t>{2, 2});
  CHECK(t.ints("strides") == std::vector<int64_t>{2, 2});
  CHECK(t.ints("pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(t.ints("dilations") == std::vector<int64_t>{1, 1});
}

TEST_CASE("max_pool: ceil_mode rounds up (in 5, k 2, s 2 -> 3)", "[compiler]") {
  OneNode t(max_pool_def(), {f32({1, 3, 5, 5})},
            A().is("kernel_shape", {2, 2}).is("strides", {2, 2}).i("ceil_mode", 1));
  CHECK(t.shape() == Shape{1, 3, 3, 3});
}

TEST_CASE("max_pool: ceil_mode drops a window that would start in the end padding", "[compiler]") {
  // Height: in 5, pads 1+1, k 3, s 3: ceil((7-3)/3)+1 = 3, but window 2 starts at 6 >= 5+1: 2.
  // Width: in 4, pads 1+1, k 2, s 2: ceil((6-2)/2)+1 = 3, window 2 starts at 4 < 4+1: kept.
  OneNode t(max_pool_def(), {f32({1, 1, 5, 4})},
            A().is("kernel_shape", {3, 2}).is("strides", {3, 2}).is("pads", {1, 1, 1, 1}).i("ceil_mode", 1));
  CHECK(t.shape() == Shape{1, 1, 2, 3});
}

TEST_CASE("max_pool: dilations and auto_pad SAME_UPPER", "[compiler]") {
  OneNode t(max_pool_def(), {f32({1, 1, 9, 9})},
            A().is("kernel_shape", {3, 3}).is("dilations", {2, 2}).s("auto_pad", "SAME_UPPER"));
  CHECK(t.shape() == Shape{1, 1, 9, 9});
  CHECK(t.ints("pads") == std::vector<int64_t>{2, 2, 2, 2});
  CHECK(t.ints("dilations") == std::vector<int64_t>{2, 2});
}

TEST_CASE("max_pool: rejects the Indices output, storage_order and a missing kernel_shape", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(max_pool_def(), {f32({1, 1, 4, 4})}, A().is("kernel_shape", {2, 2}), 2), of::Error);
  REQUIRE_THROWS_WITH(OneNode(max_pool_def(), {f32({1, 1, 4, 4})}, A().is("kernel_shape", {2, 2}), 2),
                      Catch::Contains("node 'MaxPool_0' (MaxPool)") && Catch::Contains("Indices) is not supported"));
  REQUIRE_THROWS_WITH(
      OneNode(max_pool_def(), {f32({1, 1, 4, 4})}, A().is("kernel_shape", {2, 2}).i("storage_order", 1)),
      Catch::Contains("storage_order = 1"));
  REQUIRE_THROWS_WITH(OneNode(max_pool_def(), {f32({1, 1, 4, 4})}),
                      Catch::Contains("node 'MaxPool_0'") && Catch::Contains("kernel_shape is required"));
}

TEST_CASE("pooling: 1-D (MaxPool1d, AvgPool1d) lowers as the 2-D kernels of height 1", "[compiler]") {
  OneNode m(max_pool_def(), {f32({2, 3, 9})}, A().is("kernel_shape", {3}).is("strides", {2}).is("pads", {1, 1}));
  CHECK(m.shape() == Shape{2, 3, 5});
  CHECK(m.ints("kernel_shape") == std::vector<int64_t>{1, 3});
  CHECK(m.ints("strides") == std::vector<int64_t>{1, 2});
  CHECK(m.ints("pads") == std::vector<int64_t>{0, 1, 0, 1});
  OneNode a(average_pool_def(), {f32({2, 3, 8})}, A().is("kernel_shape", {2}).is("strides", {2}));
  CHECK(a.shape() == Shape{2, 3, 4});
  CHECK(a.ints("kernel_shape") == std::vector<int64_t>{1, 2});
  REQUIRE_THROWS_WITH(OneNode(max_pool_def(), {f32({2, 3, 9})}, A().is("kernel_shape", {3, 3})),
                      Catch::Contains("kernel_shape has 2 values, expected 1"));
}

TEST_CASE("max_pool: rejects 4-D pooling and bad strides", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(max_pool_def(), {f32({1, 1, 4, 4, 4, 4})}, A().is("kernel_shape", {2, 2, 2, 2})),
                      Catch::Contains("only 1-D, 2-D and 3-D max pooling is supported: input 0 has shape [1,1,4,4,4,4]"));
  REQUIRE_THROWS_WITH(
      OneNode(max_pool_def(), {f32({1, 1, 4, 4})}, A().is("kernel_shape", {2, 2}).is("strides", {0, 1})),
      Catch::Contains("attribute strides = [0,1] must hold values >= 1"));
}

TEST_CASE("average_pool: pads and count_include_pad reach the kernel", "[compiler]") {
  OneNode t(average_pool_def(), {f32({2, 3, 6, 6})},
            A().is("kernel_shape", {3, 3}).is("pads", {1, 1, 1, 1}).i("count_include_pad", 1));
  CHECK(t.shape() == Shape{2, 3, 6, 6});
  CHECK(t.kernel() == "average_pool");
  CHECK(t.ints("kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(t.ints("strides") == std::vector<int64_t>{1, 1});
  CHECK(t.ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(t.int_attr("count_include_pad") == 1);
  CHECK_FALSE(t.node().kernel_attrs.has("dilations"));
}

TEST_CASE("average_pool: ceil_mode and default count_include_pad", "[compiler]") {
  OneNode t(average_pool_def(), {f32({1, 1, 5, 5})},
            A().is("kernel_shape", {2, 2}).is("strides", {2, 2}).i("ceil_mode", 1));
  CHECK(t.shape() == Shape{1, 1, 3, 3});
  CHECK(t.int_attr("count_include_pad") == 0);
}

TEST_CASE("average_pool: rejects dilations and non-f32 input", "[compiler]") {
  REQUIRE_THROWS_WITH(
      OneNode(average_pool_def(), {f32({1, 1, 6, 6})}, A().is("kernel_shape", {2, 2}).is("dilations", {2, 2})),
      Catch::Contains("node 'AveragePool_0'") && Catch::Contains("dilations is not supported"));
  REQUIRE_THROWS_WITH(OneNode(average_pool_def(), {typed({1, 1, 6, 6}, DType::i64)}, A().is("kernel_shape", {2, 2})),
                      Catch::Contains("input 0 has dtype i64, only f32 is supported"));
}

TEST_CASE("global_average_pool: spatial dims become 1", "[compiler]") {
  OneNode t(global_average_pool_def(), {f32({2, 16, 7, 5})});
  CHECK(t.shape() == Shape{2, 16, 1, 1});
  CHECK(t.kernel() == "global_average_pool");
  OneNode t3(global_average_pool_def(), {f32({2, 16, 9})});
  CHECK(t3.shape() == Shape{2, 16, 1});
}

TEST_CASE("global_average_pool: rejects rank < 3", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(global_average_pool_def(), {f32({2, 16})}),
                      Catch::Contains("node 'GlobalAveragePool_0'") && Catch::Contains("expected rank >= 3"));
}

}  // namespace of::compiler::test
