// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

// The passes up to recompute, as the pipeline runs them.
static Compilation until_recompute(const std::string& model, bool& changed, const std::string& loss = "cross_entropy") {
  Compilation c{.graph = import_onnx_file(fixture(model))};
  c.graph.training = true;
  c.options.train = true;
  c.options.loss = loss;
  c.options.recompute = true;
  FuseGelu().run(c);
  FuseLayerNorm().run(c);
  REQUIRE(InferShapes().run(c));
  FuseTransposedWeights().run(c);
  REQUIRE(Autodiff().run(c));
  REQUIRE(AddOptimizer().run(c));
  changed = Recompute().run(c);
  verify(c.graph, "recompute");
  return c;
}

static bool backward(const Node& n) { return n.forward >= 0 && n.inplace.empty() && n.recompute_of < 0; }

static std::vector<NodeId> clones_of(const Graph& g, const std::string& op) {
  std::vector<NodeId> out;
  for (NodeId n = 0; n < NodeId(g.nodes.size()); ++n)
    if (g.nodes[size_t(n)].recompute_of >= 0 && g.nodes[size_t(n)].op_type == op) out.push_back(n);
  return out;
}

// bn_mlp_train: Linear(784,32) -> BatchNorm1d -> ReLU -> Linear(32,10).
TEST_CASE("recompute: BatchNorm then ReLU is made again in the backward pass from the kept Linear output", "[compiler]") {
  bool changed = false;
  const Compilation c = until_recompute("export/bn_mlp_train.onnx", changed);
  const Graph& g = c.graph;
  REQUIRE(changed);
  const std::vector<NodeId> bn = clones_of(g, "BatchNormalization"), relu = clones_of(g, "Relu");
  REQUIRE(bn.size() == 1);
  REQUIRE(relu.size() == 1);
  const Node& bn_clone = g.nodes[size_t(bn[0])];
  const Node& relu_clone = g.nodes[size_t(relu[0])];
  const Node& bn_original = g.nodes[size_t(bn_clone.recompute_of)];
  const Node& relu_original = g.nodes[size_t(relu_clone.recompute_of)];
  // The same op on the same inputs: the clone reads what the original read, or its clone's output.
  CHECK(bn_clone.kernel == bn_original.kernel);
  CHECK(bn_clone.runtime_inputs == bn_original.runtime_inputs);
  CHECK(relu_clone.runtime_inputs == std::vector<ValueId>{bn_clone.outputs[0]});
  // No backward node reads the originals' outputs any more; the ReLU gradient reads the clone's.
  for (const Node& n : g.nodes) {
    if (!backward(n)) continue;
    for (ValueId v : n.runtime_inputs) {
      CHECK(v != relu_original.outputs[0]);
      CHECK(v != bn_original.outputs[0]);
    }
  }
  const bool relu_grad_reads_clone = std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return n.kernel == "relu_grad" && std::count(n.runtime_inputs.begin(), n.runtime_inputs.end(), relu_clone.outputs[0]) == 1;
  });
  CHECK(relu_grad_reads_clone);
  // The running statistics are updated once, from the original's batch statistics.
  const auto update = std::find_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "BatchNormStatsUpdate"; });
  REQUIRE(update != g.nodes.end());
  for (ValueId v : {update->inputs[0], update->inputs[1]}) CHECK(g.values[size_t(v)].producer == bn_clone.recompute_of);
  CHECK(std::count_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "BatchNormStatsUpdate"; }) == 1);
  // The chain's first clone waits for a gradient; the ReLU's clone follows it by its input.
  REQUIRE(bn_clone.control_inputs.size() == 1);
  const NodeId gate = g.values[size_t(bn_clone.control_inputs[0])].producer;
  REQUIRE(gate >= 0);
  CHECK(backward(g.nodes[size_t(gate)]));
  CHECK(gate < bn[0]);
  CHECK(bn[0] < relu[0]);
}

// mlp.onnx: Linear -> ReLU -> ... : ReLU's gradient reads its output, which only the Gemm before
// it can make; recomputing would keep the Gemm's output instead, as large: nothing to gain.
TEST_CASE("recompute: a ReLU after a Linear is kept, as nothing cheaper makes it", "[compiler]") {
  bool changed = true;
  const Compilation c = until_recompute("mlp.onnx", changed);
  CHECK_FALSE(changed);
  CHECK(std::none_of(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& n) { return n.recompute_of >= 0; }));
}

// ln_mlp_train: Linear -> LayerNorm(16) -> Linear -> LayerNorm((3,4)): LayerNorm's gradient keeps
// its input, so the outputs that the second Linear's weight gradient and the loss's gradient read
// are made again from theirs.
TEST_CASE("recompute: a LayerNorm output is made again from the input its gradient keeps", "[compiler]") {
  bool changed = false;
  const Compilation c = until_recompute("export/ln_mlp_train.onnx", changed, "mse");
  REQUIRE(changed);
  const std::vector<NodeId> ln = clones_of(c.graph, "LayerNormalization");
  REQUIRE(ln.size() == 2);
  for (NodeId id : ln) {
    const Node& clone = c.graph.nodes[size_t(id)];
    CHECK(clone.runtime_inputs == c.graph.nodes[size_t(clone.recompute_of)].runtime_inputs);
  }
  // The first LayerNorm's clone waits for the second Linear's output gradient; the loss's
  // gradient reads no gradient, so the clone it reads waits for nothing.
  CHECK(c.graph.nodes[size_t(ln[0])].control_inputs.size() + c.graph.nodes[size_t(ln[1])].control_inputs.size() == 1);
}

TEST_CASE("recompute: a clone's wait becomes a register its task consumes without reading, in one device and parallel plans", "[compiler]") {
  for (int32_t devices : {1, 2}) {
    INFO("devices " << devices);
    CompileOptions o;
    o.train = true;
    o.loss = "cross_entropy";
    o.recompute = true;
    o.devices = o.dp = devices;
    const Compilation c = compile_model(fixture("export/bn_mlp_train.onnx"), o);
    long clones = 0, waiting = 0;
    for (const auto& t : c.tasks.tasks) {
      if (t.name.rfind("recompute/", 0) != 0) continue;
      ++clones;
      for (auto r : t.in_regsts)
        waiting += std::none_of(t.inputs.begin(), t.inputs.end(), [&](const of::plan::TaskInput& in) {
          return in.kind == of::plan::InputKind::regst && in.id == r;
        });
    }
    // Per device, BatchNorm-then-ReLU made again is one task: an apply that reads the kept
    // statistics (recompute keeps such small outputs; split-batch-norm reads the original's) with
    // the ReLU fused into it.
    CHECK(clones == devices);
    CHECK(waiting >= devices);  // each device's BatchNorm clone waits for that device's gradient
    for (const auto& t : c.tasks.tasks) {
      if (t.name.rfind("recompute/", 0) != 0) continue;
      CHECK(t.kernel == "batch_norm_apply");
      // Its statistics are its own device's original BatchNorm's.
      REQUIRE(t.inputs.size() == 5);
      for (size_t k : {size_t(3), size_t(4)}) {
        const auto& stats = c.tasks.tasks[size_t(c.tasks.regsts[size_t(t.inputs[k].id)].producer)];
        CHECK(stats.kernel == "batch_norm_stats");
        CHECK(stats.device == t.device);
        CHECK(stats.name.rfind("recompute/", 0) != 0);
      }
    }
  }
}
