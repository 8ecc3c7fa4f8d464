// SPDX-License-Identifier: Apache-2.0
// --loss cross_entropy takes what torch's F.cross_entropy takes: logits [N,C] with class ids [N],
// or [N,C,d1,...] with class ids [N,d1,...] (segmentation), the classes moved last and the rest
// made rows for the loss kernels; evaluation metrics come per sample whatever a sample's labels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

// y = x * scale.weight, x a [2,3,4,5] input ("pixels" [4,5] of 3 classes), the weight [3,1,1].
Graph per_pixel_logits(of::Shape x_shape) {
  Graph g;
  g.name = "segmenter";
  const ValueId x = g.add_value("x");
  g.values[size_t(x)].desc = of::TensorDesc{x_shape, of::DType::f32};
  g.values[size_t(x)].known = true;
  g.values[size_t(x)].graph_input = true;
  g.inputs = {x};
  const ValueId w = g.add_value("scale.weight");
  of::Shape ws(x_shape.size() - 1, 1);
  ws[0] = x_shape[1];
  Value& wv = g.values[size_t(w)];
  wv.desc = of::TensorDesc{ws, of::DType::f32};
  wv.data = std::vector<uint8_t>(size_t(wv.desc.bytes()), 0);
  wv.known = true;
  wv.initializer = true;
  const ValueId y = g.add_value("y");
  g.nodes.push_back(Node{.name = "mul", .op_type = "Mul", .inputs = {x, w}, .outputs = {y}});
  g.values[size_t(y)].graph_output = true;
  g.outputs = {y};
  relink(g);
  return g;
}

Compilation with_loss(of::Shape x_shape, bool eval_metrics) {
  Compilation c{.graph = per_pixel_logits(std::move(x_shape))};
  c.options.loss = "cross_entropy";
  c.options.label = "label";
  c.options.train = !eval_metrics;
  c.options.eval_metrics = eval_metrics;
  REQUIRE(InferShapes().run(c));
  REQUIRE(Autodiff().run(c));
  verify(c.graph, "autodiff");
  return c;
}

const Node& node_of(const Graph& g, const std::string& kernel) {
  auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.kernel == kernel; });
  REQUIRE(it != g.nodes.end());
  return *it;
}

const of::TensorDesc& desc(const Graph& g, ValueId v) { return g.values[size_t(v)].desc; }

}  // namespace

TEST_CASE("cross_entropy: logits N,C,H,W take labels N,H,W, one row of classes per pixel", "[compiler]") {
  Compilation c = with_loss({2, 3, 4, 5}, false);
  const Graph& g = c.graph;
  const ValueId label = g.inputs.back();
  CHECK(g.values[size_t(label)].name == "label");
  CHECK(desc(g, label).shape == of::Shape{2, 4, 5});
  CHECK(desc(g, label).dtype == of::DType::i64);
  const Node& loss = node_of(g, "softmax_cross_entropy");
  CHECK(desc(g, loss.inputs[0]).shape == of::Shape{40, 3});
  CHECK(desc(g, loss.inputs[1]).shape == of::Shape{40});
  const Node& last = node_of(g, "transpose");
  CHECK(last.kernel_attrs.get_ints("perm") == std::vector<int64_t>{0, 2, 3, 1});
  // The gradient flows back through the reshape and the transpose to the weight.
  REQUIRE(c.training.weights.size() == 1);
  CHECK(desc(g, c.training.weights[0].second).shape == of::Shape{3, 1, 1});
  const Node& grad = node_of(g, "softmax_cross_entropy_grad");
  CHECK(desc(g, grad.outputs[0]).shape == of::Shape{40, 3});
}

TEST_CASE("cross_entropy: logits N,C keep labels N and no transpose", "[compiler]") {
  Compilation c = with_loss({6, 3}, false);
  const Graph& g = c.graph;
  CHECK(desc(g, g.inputs.back()).shape == of::Shape{6});
  CHECK(std::none_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.kernel == "transpose"; }));
  CHECK(node_of(g, "softmax_cross_entropy").inputs[0] == g.nodes[0].outputs[0]);
}

TEST_CASE("cross_entropy: evaluation metrics of a per-pixel model are each sample's sums and counted labels", "[compiler]") {
  Compilation c = with_loss({2, 3, 4, 5}, true);
  const Graph& g = c.graph;
  REQUIRE(g.outputs.size() == 3);
  CHECK(g.values[size_t(g.outputs[0])].name == "eval/nll");
  CHECK(g.values[size_t(g.outputs[1])].name == "eval/correct");
  CHECK(g.values[size_t(g.outputs[2])].name == "eval/count");
  for (ValueId v : g.outputs) {
    CHECK(desc(g, v).shape == of::Shape{2});
    const Node& sum = g.nodes[size_t(g.values[size_t(v)].producer)];
    CHECK(sum.kernel == "reduce_sum");
    CHECK(sum.kernel_attrs.get_float("divisor", 0) == 1.0f);
    CHECK(desc(g, sum.inputs[0]).shape == of::Shape{2, 20});
  }
  // One label a sample: the metrics are the kernel's rows as they are.
  Compilation rows = with_loss({6, 3}, true);
  const Node& metrics = node_of(rows.graph, "classify_metrics");
  CHECK(rows.graph.outputs == metrics.outputs);
}

TEST_CASE("cross_entropy: a rank-1 output is refused naming the output and its shape", "[compiler]") {
  Compilation c{.graph = per_pixel_logits({6, 3})};
  c.graph.values[size_t(c.graph.inputs[0])].desc.shape = {3};
  c.graph.values[size_t(c.graph.nodes[0].inputs[1])].desc.shape = {3};
  c.options.loss = "cross_entropy";
  c.options.train = true;
  REQUIRE(InferShapes().run(c));
  REQUIRE_THROWS_WITH(Autodiff().run(c), Catch::Contains("needs logits [N,C] or [N,C,d1,...]") && Catch::Contains("'y' is [3]"));
}

TEST_CASE("cross_entropy: label smoothing and ignore_index reach the kernels, a bad option is refused by name", "[compiler]") {
  Compilation c{.graph = per_pixel_logits({6, 3})};
  c.options.loss = "cross_entropy:label_smoothing=0.1";
  c.options.train = true;
  REQUIRE(InferShapes().run(c));
  REQUIRE(Autodiff().run(c));
  CHECK(node_of(c.graph, "softmax_cross_entropy").kernel_attrs.get_float("label_smoothing", 0) == 0.1f);
  CHECK(node_of(c.graph, "softmax_cross_entropy_grad").kernel_attrs.get_float("label_smoothing", 0) == 0.1f);
  Compilation i{.graph = per_pixel_logits({6, 3})};
  i.options.loss = "cross_entropy:ignore_index=255";
  i.options.eval_metrics = true;
  REQUIRE(InferShapes().run(i));
  REQUIRE(Autodiff().run(i));
  CHECK(node_of(i.graph, "classify_metrics").kernel_attrs.get_int("ignore_index", 0) == 255);
  for (const char* bad : {"cross_entropy:smoothing=0.1", "cross_entropy:label_smoothing=2", "mse:label_smoothing=0.1", "hinge",
                          "cross_entropy:ignore_index=2.5"}) {
    INFO(bad);
    Compilation b{.graph = per_pixel_logits({6, 3})};
    b.options.loss = bad;
    b.options.train = true;
    REQUIRE(InferShapes().run(b));
    REQUIRE_THROWS_WITH(Autodiff().run(b), Catch::Contains("--loss"));
  }
}
