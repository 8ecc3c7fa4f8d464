// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("delay: passes the shape through and the delay to the kernel", "[compiler]") {
  OneNode t(delay_def(), {f32({4, 8})}, A().f("ms", 25.0f));
  CHECK(t.shape() == Shape{4, 8});
  CHECK(t.kernel() == "delay");
  CHECK(t.float_attr("ms") == 25.0f);
}

TEST_CASE("delay: rejects a missing or negative ms", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(delay_def(), {f32({4})}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(delay_def(), {f32({4})}),
                      Catch::Contains("node 'Delay_0' (Delay)") && Catch::Contains("attribute ms"));
  REQUIRE_THROWS_WITH(OneNode(delay_def(), {f32({4})}, A().f("ms", -1.0f)), Catch::Contains("ms = -1 must be >= 0"));
}

}  // namespace of::compiler::test
