// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("batch_norm: inference form keeps the shape and passes epsilon", "[compiler]") {
  OneNode t(batch_norm_def(), {f32({2, 4, 5, 5}), f32({4}), f32({4}), f32({4}), f32({4})}, A().f("epsilon", 1e-3f));
  CHECK(t.shape() == Shape{2, 4, 5, 5});
  CHECK(t.kernel() == "batch_norm");
  CHECK(t.float_attr("epsilon") == 1e-3f);
  CHECK(OneNode(batch_norm_def(), {f32({2, 4}), f32({4}), f32({4}), f32({4}), f32({4})}).float_attr("epsilon") == 1e-5f);
}

TEST_CASE("batch_norm: rejects a per-channel input of the wrong size", "[compiler]") {
  REQUIRE_THROWS_AS(OneNode(batch_norm_def(), {f32({2, 4, 5, 5}), f32({4}), f32({4}), f32({3}), f32({4})}), of::Error);
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), {f32({2, 4, 5, 5}), f32({4}), f32({4}), f32({3}), f32({4})}),
                      Catch::Contains("node 'BatchNormalization_0' (BatchNormalization)") &&
                          Catch::Contains("input 3 (mean) has shape [3], expected [4]"));
}

TEST_CASE("batch_norm: rejects training mode and training outputs", "[compiler]") {
  std::vector<In> ins = {f32({2, 4}), f32({4}), f32({4}), f32({4}), f32({4})};
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), ins, A().i("training_mode", 1)),
                      Catch::Contains("training_mode = 1 is not supported"));
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), ins, {}, 3),
                      Catch::Contains("has 3 outputs; the training outputs"));
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), {f32({2, 4}), f32({4}), f32({4})}),
                      Catch::Contains("expects 5 inputs, has 3"));
}

}  // namespace of::compiler::test
