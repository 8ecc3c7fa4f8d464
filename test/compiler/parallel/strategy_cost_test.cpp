// SPDX-License-Identifier: Apache-2.0
// The closed-form estimate of a split of the devices (strategy_cost.h) on the MLP's training
// graph as parallelize would start from it: more devices share the work, reductions cost more
// across ranks than within one, pipelines pay their fill, and the estimate orders the MLP's
// splits as their compiled and played plans do.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/parallel/strategy_cost.h"

using namespace of::compiler;

namespace {

CompileOptions training() {
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  o.optimizer = "adamw";
  return o;
}

const Graph& mlp_graph() {
  static const Compilation c = compile_before_parallelize(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", training());
  return c.graph;
}

StrategyEstimate estimate(int32_t dp, int32_t tp, int32_t pp, int32_t ranks = 1, int32_t micro_batches = 1) {
  const StrategyShape s{.dp = dp, .tp = tp, .pp = pp, .micro_batches = micro_batches, .ranks = ranks, .devices = dp * tp * pp};
  return estimate_strategy(mlp_graph(), s, of::builtin_costs());
}

}  // namespace

TEST_CASE("strategy estimate: data parallel devices share the compute and pay an all-reduce", "[compiler]") {
  const StrategyEstimate one = estimate(1, 1, 1), four = estimate(4, 1, 1);
  CHECK(one.dp_s == 0);
  CHECK(one.tp_s == 0);
  CHECK(four.compute_s < one.compute_s / 2);
  CHECK(four.dp_s > 0);
  CHECK(four.tp_s == 0);
  // The same all-reduce between ranks (each device its own) crosses the slower link.
  CHECK(estimate(4, 1, 1, 4).dp_s > 2 * four.dp_s);
}

TEST_CASE("strategy estimate: tensor parallel pays a reduction per matrix product, forward and back", "[compiler]") {
  const StrategyEstimate tp = estimate(1, 4, 1);
  CHECK(tp.tp_s > 0);
  CHECK(tp.dp_s == 0);
  CHECK(tp.compute_s < estimate(1, 1, 1).compute_s / 2);
}

TEST_CASE("strategy estimate: a pipeline pays its fill, which micro-batches amortise", "[compiler]") {
  const double serial = estimate(1, 1, 1, 1, 8).compute_s;
  const StrategyEstimate one_piece = estimate(1, 1, 2, 1, 1), eight = estimate(1, 1, 2, 1, 8);
  CHECK(one_piece.pp_s > 0);
  // Eight pieces over two stages take (8 + 1) of a stage's piece, about 9/16 of one device's time.
  CHECK(eight.compute_s < 0.8 * serial);
  CHECK(eight.compute_s > 0.45 * serial);
  CHECK(eight.compute_s / 8 < one_piece.compute_s);
}

TEST_CASE("strategy estimate: orders the MLP's splits over 4 devices as their played plans do", "[compiler]") {
  // The splits that compile with one micro-batch (pipelines need more): by the estimate, then by
  // the prediction of their compiled plans.
  std::vector<std::pair<double, std::string>> by_estimate, by_plan;
  for (auto [dp, tp] : std::vector<std::pair<int32_t, int32_t>>{{4, 1}, {2, 2}, {1, 4}}) {
    const std::string name = std::to_string(dp) + "x" + std::to_string(tp);
    by_estimate.emplace_back(estimate(dp, tp, 1).step_seconds(), name);
    CompileOptions o = training();
    o.devices = 4;
    o.dp = dp;
    o.tp = tp;
    by_plan.emplace_back(compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o).tasks.prediction.step_seconds, name);
  }
  std::sort(by_estimate.begin(), by_estimate.end());
  std::sort(by_plan.begin(), by_plan.end());
  for (size_t i = 0; i < by_plan.size(); ++i) {
    INFO(i << ": estimate " << by_estimate[i].second << " " << by_estimate[i].first << " s, plan " << by_plan[i].second << " "
            << by_plan[i].first << " s");
    CHECK(by_estimate[i].second == by_plan[i].second);
  }
}
