// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("softmax: default axis -1 is normalized", "[compiler]") {
  OneNode t(softmax_def(), {f32({2, 3, 10})});
  CHECK(t.shape() == Shape{2, 3, 10});
  CHECK(t.kernel() == "softmax");
  CHECK(t.int_attr("axis") == 2);
}

TEST_CASE("log_softmax: negative axis is normalized", "[compiler]") {
  OneNode t(log_softmax_def(), {f32({2, 3, 10})}, A().i("axis", -2));
  CHECK(t.kernel() == "log_softmax");
  CHECK(t.int_attr("axis") == 1);
}

TEST_CASE("softmax: rejects an axis out of range", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(softmax_def(), {f32({2, 3})}, A().i("axis", 2)), of::Error);
  REQUIRE_THROWS_WITH(OneNode(softmax_def(), {f32({2, 3})}, A().i("axis", 2)),
                      Catch::Contains("node 'Softmax_0' (Softmax)") &&
                          Catch::Contains("axis 2 is out of range for rank 2"));
}

}  // namespace of::compiler::test
