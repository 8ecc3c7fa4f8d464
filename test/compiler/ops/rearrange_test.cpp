// SPDX-License-Identifier: Apache-2.0
// The composites that move or sum elements: their shapes and refusals (their expansions are
// checked against PyTorch by test/e2e/zoo.py's model rearrange).
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("rearrange: Tile, DepthToSpace, CumSum, ReduceMin and ReduceLogSumExp shapes", "[compiler]") {
  CHECK(OneNode(tile_def(), {f32({2, 3}), const_i64({1, 4})}).shape() == Shape{2, 12});
  CHECK(OneNode(depth_to_space_def(), {f32({1, 8, 3, 4})}, A().i("blocksize", 2).s("mode", "CRD")).shape() == Shape{1, 2, 6, 8});
  CHECK(OneNode(cumsum_def(), {f32({2, 5, 3}), const_i64({-2})}).shape() == Shape{2, 5, 3});
  OneNode amin(reduce_min_def(), {f32({2, 5, 3})}, A().is("axes", {1}).i("keepdims", 0));
  CHECK(amin.shape() == Shape{2, 3});
  CHECK(amin.node().kernel_attrs.get_ints("axes") == std::vector<int64_t>{1});
  CHECK(OneNode(reduce_log_sum_exp_def(), {f32({2, 5})}, A().is("axes", {-1})).shape() == Shape{2, 1});
}

TEST_CASE("rearrange: composites refuse what they cannot write, naming the node", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(tile_def(), {f32({2, 3}), const_i64({2})}), Catch::Contains("(Tile)") && Catch::Contains("repeats has 1 values"));
  REQUIRE_THROWS_WITH(OneNode(tile_def(), {f32({2, 3}), const_i64({1, -1})}), Catch::Contains("negative count"));
  REQUIRE_THROWS_WITH(OneNode(depth_to_space_def(), {f32({1, 6, 3, 4})}, A().i("blocksize", 2)),
                      Catch::Contains("(DepthToSpace)") && Catch::Contains("not a multiple of blocksize^2 = 4"));
  REQUIRE_THROWS_WITH(OneNode(depth_to_space_def(), {f32({1, 8, 3, 4})}, A().i("blocksize", 2).s("mode", "XYZ")), Catch::Contains("mode 'XYZ'"));
  REQUIRE_THROWS_WITH(OneNode(cumsum_def(), {f32({2, 5000}), const_i64({1})}),
                      Catch::Contains("(CumSum)") && Catch::Contains("longer than 2048"));
  REQUIRE_THROWS_WITH(OneNode(reduce_min_def(), {f32({2, 0})}, A().is("axes", {1})), Catch::Contains("it has no minimum"));
}

}  // namespace of::compiler::test

namespace of::compiler::test {

TEST_CASE("rearrange: Selu and Celu keep the input's shape, Celu refuses alpha 0", "[compiler]") {
  CHECK(OneNode(selu_def(), {f32({4, 3})}).shape() == Shape{4, 3});
  CHECK(OneNode(celu_def(), {f32({4, 3})}, A().f("alpha", 0.5f)).shape() == Shape{4, 3});
  REQUIRE_THROWS_WITH(OneNode(celu_def(), {f32({4, 3})}, A().f("alpha", 0.0f)), Catch::Contains("(Celu)") && Catch::Contains("alpha"));
}

}  // namespace of::compiler::test

namespace of::compiler::test {

TEST_CASE("rearrange: GatherElements takes fixed indices as flat offsets, refuses out-of-range ones", "[compiler]") {
  In idx = const_i64({2, 0, -1, 1});
  idx.shape = {2, 2};
  OneNode t(gather_elements_def(), {f32({2, 3}), idx}, A().i("axis", 1));
  CHECK(t.shape() == Shape{2, 2});
  CHECK(t.node().kernel_attrs.get_ints("offsets") == std::vector<int64_t>{2, 0, 5, 4});  // row 1: -1 is 2, then 1
  In bad = const_i64({0, 3});
  bad.shape = {1, 2};
  REQUIRE_THROWS_WITH(OneNode(gather_elements_def(), {f32({2, 3}), bad}, A().i("axis", 1)),
                      Catch::Contains("(GatherElements)") && Catch::Contains("index 3 at flat position 1 is outside axis 1"));
}

TEST_CASE("rearrange: GatherElements with run-time indices (logp.gather(1, actions)) keeps the indices' shape", "[compiler]") {
  OneNode t(gather_elements_def(), {f32({4, 6}), typed({4, 1}, DType::i64)}, A().i("axis", -1));
  CHECK(t.shape() == Shape{4, 1});
  CHECK(t.node().kernel_attrs.get_int("runtime", 0) == 1);
  CHECK(t.node().kernel_attrs.get_int("axis", 0) == 1);
  REQUIRE_THROWS_WITH(OneNode(gather_elements_def(), {f32({4, 6}), typed({5, 1}, DType::i64)}, A().i("axis", 1)),
                      Catch::Contains("(GatherElements)") && Catch::Contains("longer than data"));
  REQUIRE_THROWS_WITH(OneNode(gather_elements_def(), {f32({4, 6}), typed({4}, DType::i64)}), Catch::Contains("differ in rank"));
}

}  // namespace of::compiler::test

namespace of::compiler::test {

TEST_CASE("rearrange: ArgMax gives int64 along one axis, keepdims or not", "[compiler]") {
  OneNode t(argmax_def(), {f32({4, 10})}, A().i("axis", -1).i("keepdims", 0));
  CHECK(t.shape() == Shape{4});
  CHECK(t.kernel() == "argmax");
  CHECK(t.g.values[size_t(t.node().outputs[0])].desc.dtype == DType::i64);
  CHECK(t.node().kernel_attrs.get_ints("axes") == std::vector<int64_t>{1});
  CHECK(OneNode(argmax_def(), {f32({4, 10})}).shape() == Shape{1, 10});
  REQUIRE_THROWS_WITH(OneNode(argmax_def(), {f32({4, 0})}, A().i("axis", 1)), Catch::Contains("(ArgMax)") && Catch::Contains("has no maximum"));
}

}  // namespace of::compiler::test

namespace of::compiler::test {

TEST_CASE("rearrange: ArgMin is ArgMax of the negation, its axis and keepdims passed on", "[compiler]") {
  OneNode t(argmin_def(), {f32({4, 10})}, A().i("axis", -1).i("keepdims", 0).i("select_last_index", 1));
  CHECK(t.shape() == Shape{4});
  CHECK(t.g.values[size_t(t.node().outputs[0])].desc.dtype == DType::i64);
  CHECK(t.node().kernel_attrs.get_int("axis", 0) == 1);
  CHECK(t.node().kernel_attrs.get_int("keepdims", 1) == 0);
  CHECK(t.node().kernel_attrs.get_int("select_last_index", 0) == 1);
  REQUIRE(argmin_def().expand != nullptr);
  REQUIRE_THROWS_WITH(OneNode(argmin_def(), {f32({4, 0})}, A().i("axis", 1)), Catch::Contains("(ArgMin)") && Catch::Contains("has no minimum"));
}

}  // namespace of::compiler::test

namespace of::compiler::test {

TEST_CASE("rearrange: ReduceL1 and ReduceSumSquare reduce their axes, keepdims or not, as the sum they expand to", "[compiler]") {
  OneNode l1(reduce_l1_def(), {f32({2, 5, 3})}, A().is("axes", {-1}).i("keepdims", 0));
  CHECK(l1.shape() == Shape{2, 5});
  CHECK(l1.node().kernel_attrs.get_ints("axes") == std::vector<int64_t>{2});
  REQUIRE(reduce_l1_def().expand != nullptr);
  OneNode sq(reduce_sum_square_def(), {f32({2, 5, 3})}, A().is("axes", {0, 1}));
  CHECK(sq.shape() == Shape{1, 1, 3});
  REQUIRE(reduce_sum_square_def().expand != nullptr);
}

}  // namespace of::compiler::test
