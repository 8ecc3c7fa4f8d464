// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <climits>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("slice: one axis with step 1 is kernel slice, its axis and start normalized", "[compiler]") {
  OneNode t(slice_def(), {f32({4, 6, 8}), const_i64({-5}), const_i64({INT64_MAX}), const_i64({-2})});
  CHECK(t.shape() == Shape{4, 5, 8});
  CHECK(t.kernel() == "slice");
  CHECK(t.int_attr("axis") == 1);
  CHECK(t.int_attr("start") == 1);
}

TEST_CASE("slice: steps and several axes are kernel strided_slice, a start and a step per axis", "[compiler]") {
  // Swin's patch merging: x[..., 1::2, 0::2, :] on [2, 7, 8, 3].
  OneNode t(slice_def(), {f32({2, 7, 8, 3}), const_i64({1, 0}), const_i64({INT64_MAX, INT64_MAX}), const_i64({1, 2}),
                          const_i64({2, 2})});
  CHECK(t.shape() == Shape{2, 3, 4, 3});
  CHECK(t.kernel() == "strided_slice");
  CHECK(t.ints("starts") == std::vector<int64_t>{0, 1, 0, 0});
  CHECK(t.ints("steps") == std::vector<int64_t>{1, 2, 2, 1});
  // A step longer than its axis takes one element.
  OneNode one(slice_def(), {f32({5}), const_i64({2}), const_i64({5}), const_i64({0}), const_i64({INT64_MAX})});
  CHECK(one.shape() == Shape{1});
}

TEST_CASE("slice: negative steps walk back, clamped as ONNX says (torch.flip)", "[compiler]") {
  // torch.flip(x, [1]) on [3, 7]: starts -1, ends INT64_MIN + 1, step -1.
  OneNode flip(slice_def(), {f32({3, 7}), const_i64({-1}), const_i64({INT64_MIN + 1}), const_i64({1}), const_i64({-1})});
  CHECK(flip.shape() == Shape{3, 7});
  CHECK(flip.kernel() == "strided_slice");
  CHECK(flip.ints("starts") == std::vector<int64_t>{0, 6});
  CHECK(flip.ints("steps") == std::vector<int64_t>{1, -1});
  // x[4:0:-2] on [5]: 4, 2; a start past the end clamps to the last element.
  CHECK(OneNode(slice_def(), {f32({5}), const_i64({4}), const_i64({0}), const_i64({0}), const_i64({-2})}).shape() == Shape{2});
  CHECK(OneNode(slice_def(), {f32({5}), const_i64({99}), const_i64({-99}), const_i64({0}), const_i64({-1})}).shape() == Shape{5});
  CHECK(OneNode(slice_def(), {f32({0}), const_i64({0}), const_i64({-1}), const_i64({0}), const_i64({-1})}).shape() == Shape{0});
}

TEST_CASE("slice: refuses step 0 and an axis named twice, naming the node", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(slice_def(), {f32({5}), const_i64({4}), const_i64({0}), const_i64({0}), const_i64({0})}),
                      Catch::Contains("node 'Slice_0' (Slice)") && Catch::Contains("step 0 on axis 0"));
  REQUIRE_THROWS_WITH(OneNode(slice_def(), {f32({5, 5}), const_i64({0, 1}), const_i64({2, 3}), const_i64({1, -1})}),
                      Catch::Contains("name axis 1 twice"));
}

}  // namespace of::compiler::test
