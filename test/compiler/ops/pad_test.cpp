// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cstring>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {
namespace {

In const_f32(float v) {
  In in = typed({}, DType::f32);
  in.data.emplace(4);
  std::memcpy(in.data->data(), &v, 4);
  return in;
}

}  // namespace

TEST_CASE("pad: every axis's pads, the fill from input 2, the mode normalized for the kernel", "[compiler]") {
  OneNode t(pad_def(), {f32({2, 3, 4}), const_i64({0, 1, 2, 0, 0, 3}), const_f32(0.5f)});
  CHECK(t.shape() == Shape{2, 4, 9});
  CHECK(t.kernel() == "pad");
  CHECK(t.node().kernel_attrs.get_ints("pads") == std::vector<int64_t>{0, 1, 2, 0, 0, 3});
  CHECK(t.node().kernel_attrs.get_str("mode") == "constant");
  CHECK(t.node().kernel_attrs.get_float("value", 0) == 0.5f);
}

TEST_CASE("pad: opset 18's axes name the padded axes, negative ones counted from the end", "[compiler]") {
  OneNode t(pad_def(), {f32({2, 3, 4}), const_i64({1, 2, 3, 4}), absent(), const_i64({-1, 1})}, A().s("mode", "edge"));
  CHECK(t.shape() == Shape{2, 3 + 2 + 4, 4 + 1 + 3});
  CHECK(t.node().kernel_attrs.get_ints("pads") == std::vector<int64_t>{0, 2, 1, 0, 4, 3});
  CHECK(t.node().kernel_attrs.get_str("mode") == "edge");
}

TEST_CASE("pad: refuses cropping, wrap, reflecting beyond an axis and run-time pads, naming the node", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(pad_def(), {f32({4}), const_i64({-1, 0})}),
                      Catch::Contains("node 'Pad_0' (Pad)") && Catch::Contains("cropping with Pad is not supported"));
  REQUIRE_THROWS_WITH(OneNode(pad_def(), {f32({4}), const_i64({1, 1})}, A().s("mode", "wrap")),
                      Catch::Contains("mode 'wrap' is not supported"));
  REQUIRE_THROWS_WITH(OneNode(pad_def(), {f32({3}), const_i64({3, 0})}, A().s("mode", "reflect")),
                      Catch::Contains("reflect pads 3 and 0 of axis 0 must be below its size 3"));
  REQUIRE_THROWS_WITH(OneNode(pad_def(), {f32({2, 3}), const_i64({1, 1})}), Catch::Contains("expected 2 x 2"));
  REQUIRE_THROWS_AS(OneNode(pad_def(), {f32({4}), typed({2}, DType::i64)}), of::Error);
}

}  // namespace of::compiler::test
