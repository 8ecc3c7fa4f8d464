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

TEST_CASE("batch_norm: a training-mode export infers with running statistics, trains with batch statistics", "[compiler]") {
  std::vector<In> ins = {f32({2, 4}), f32({4}), f32({4}), f32({4}), f32({4})};
  // An inference or evaluation plan of a training export: the running-statistics outputs nothing
  // reads are dropped and the inference kernel runs.
  OneNode infer(batch_norm_def(), ins, A().i("training_mode", 1), 3);
  CHECK(infer.kernel() == "batch_norm");
  CHECK(infer.node().outputs.size() == 1);
  // A training plan: batch statistics, saved for the backward pass and the running update.
  OneNode train(batch_norm_def(), ins, A().i("training_mode", 1).f("momentum", 0.9f), 3, true);
  CHECK(train.kernel() == "batch_norm_train");
  CHECK(train.node().outputs.size() == 4);  // Y, saved mean, saved inverse std, unbiased variance
  CHECK(train.node().runtime_inputs.size() == 3);  // the running statistics are the update's
  CHECK(train.float_attr("momentum") == Approx(0.1f));  // torch's momentum, not ONNX's
  // One value per channel has no variance (torch refuses it too).
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), {f32({1, 4}), f32({4}), f32({4}), f32({4}), f32({4})},
                              A().i("training_mode", 1), 1, true),
                      Catch::Contains("one value per channel"));
  REQUIRE_THROWS_WITH(OneNode(batch_norm_def(), {f32({2, 4}), f32({4}), f32({4})}),
                      Catch::Contains("expects 5 inputs, has 3"));
}

}  // namespace of::compiler::test
