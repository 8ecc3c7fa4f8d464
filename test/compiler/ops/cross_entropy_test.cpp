// SPDX-License-Identifier: Apache-2.0
// SoftmaxCrossEntropyLoss with class probabilities as its target (F.cross_entropy against mixup's
// soft labels): the shapes it takes and refuses, and that infer-shapes writes it out as the ops it
// is (its numbers against PyTorch: test/e2e/zoo.py's model mixup).
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/ops/ops.h"
#include "compiler/passes/pass.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("cross entropy: class probabilities of the scores' shape give a scalar loss, class ids stay int64", "[compiler]") {
  CHECK(OneNode(softmax_cross_entropy_loss_def(), {f32({4, 10}), f32({4, 10})}).shape() == Shape{});
  CHECK(OneNode(softmax_cross_entropy_loss_def(), {f32({2, 3, 5, 5}), f32({2, 3, 5, 5})}, A().s("reduction", "sum")).shape() == Shape{});
  REQUIRE_THROWS_WITH(OneNode(softmax_cross_entropy_loss_def(), {f32({4, 10}), f32({4, 9})}),
                      Catch::Contains("(SoftmaxCrossEntropyLoss)") && Catch::Contains("class probabilities") &&
                          Catch::Contains("[4,9]"));
  // torch's nll_loss takes class ids only.
  REQUIRE_THROWS_WITH(OneNode(negative_log_likelihood_loss_def(), {f32({4, 10}), f32({4, 10})}),
                      Catch::Contains("(NegativeLogLikelihoodLoss)") && Catch::Contains("expected int64"));
}

TEST_CASE("cross entropy: class probabilities are written out as -sum(p log_softmax(x)) over the rows", "[compiler]") {
  OneNode t(softmax_cross_entropy_loss_def(), {f32({4, 10}), f32({4, 10})});
  Compilation c{.graph = t.g};
  c.graph.values[size_t(c.graph.nodes[0].outputs[0])].graph_output = true;
  c.graph.outputs = {c.graph.nodes[0].outputs[0]};
  InferShapes().run(c);
  const auto has = [&](const std::string& op) {
    return std::any_of(c.graph.nodes.begin(), c.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  };
  CHECK(has("LogSoftmax"));
  CHECK(has("ReduceSum"));
  CHECK(has("Div"));  // mean: by the rows
  CHECK_FALSE(has("SoftmaxCrossEntropy"));
  CHECK_FALSE(has("SoftmaxCrossEntropyLoss"));
}

}  // namespace of::compiler::test
