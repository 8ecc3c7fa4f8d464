// SPDX-License-Identifier: Apache-2.0
// --loss output: a model that computes its own loss (torch's export of F.cross_entropy inside the
// model: SoftmaxCrossEntropyLoss, with class weights, ignore_index and reduction) is trained from
// that output; the op expands into rows of classes for the loss kernels, and what cannot be
// trained faithfully is refused in one line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

ValueId input(Graph& g, const std::string& name, of::TensorDesc desc) {
  const ValueId v = g.add_value(name);
  g.values[size_t(v)].desc = std::move(desc);
  g.values[size_t(v)].known = true;
  g.values[size_t(v)].graph_input = true;
  g.inputs.push_back(v);
  return v;
}

ValueId initializer(Graph& g, const std::string& name, of::Shape shape) {
  const ValueId v = g.add_value(name);
  Value& val = g.values[size_t(v)];
  val.desc = of::TensorDesc{std::move(shape), of::DType::f32};
  val.data = std::vector<uint8_t>(size_t(val.desc.bytes()), 0);
  val.known = true;
  val.initializer = true;
  return v;
}

struct LossModel {
  of::Shape x{2, 3, 4, 5};           // [N,C,H,W]: a class per pixel
  std::string reduction = "mean";
  bool class_weights = true;
  int64_t ignore_index = 255;
  bool log_prob_read = false;        // the op's second output is an output of the model too
  std::string op = "SoftmaxCrossEntropyLoss";  // or NegativeLogLikelihoodLoss (over log-probabilities)
};

// loss = SoftmaxCrossEntropyLoss(input * scale.weight, label[, criterion.weight]).
Graph own_loss_model(const LossModel& m) {
  Graph g;
  g.name = "with_loss";
  const ValueId x = input(g, "input", of::TensorDesc{m.x, of::DType::f32});
  of::Shape ids = m.x;
  ids.erase(ids.begin() + 1);
  const ValueId label = input(g, "label", of::TensorDesc{ids, of::DType::i64});
  of::Shape ws(m.x.size() - 1, 1);
  ws[0] = m.x[1];
  const ValueId w = initializer(g, "scale.weight", ws);
  const ValueId y = g.add_value("logits");
  g.nodes.push_back(Node{.name = "mul", .op_type = "Mul", .inputs = {x, w}, .outputs = {y}});
  std::vector<ValueId> in{y, label};
  if (m.class_weights) in.push_back(initializer(g, "criterion.weight", {m.x[1]}));
  const ValueId loss = g.add_value("loss");
  Node xent{.name = "xent", .op_type = m.op, .inputs = in, .outputs = {loss}};
  xent.attrs.set_str("reduction", m.reduction);
  xent.attrs.set_int("ignore_index", m.ignore_index);
  if (m.log_prob_read) xent.outputs.push_back(g.add_value("log_prob"));
  g.nodes.push_back(std::move(xent));
  g.outputs = {loss};
  if (m.log_prob_read) g.outputs.push_back(g.nodes.back().outputs[1]);
  for (ValueId v : g.outputs) g.values[size_t(v)].graph_output = true;
  relink(g);
  return g;
}

Compilation compile(Graph g, std::string label = "label", bool eval_metrics = false, std::string loss = "output") {
  Compilation c{.graph = std::move(g)};
  c.options.loss = std::move(loss);
  c.options.label = std::move(label);
  c.options.train = !eval_metrics;
  c.options.eval_metrics = eval_metrics;
  const bool inferred = InferShapes().run(c);  // (outside REQUIRE: its errors are what some cases test)
  REQUIRE(inferred);
  Autodiff().run(c);
  verify(c.graph, "autodiff");
  return c;
}

const Node& node_of(const Graph& g, const std::string& kernel) {
  auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.kernel == kernel; });
  REQUIRE(it != g.nodes.end());
  return *it;
}

const of::TensorDesc& desc(const Graph& g, ValueId v) { return g.values[size_t(v)].desc; }

std::string error_of(const Graph& g, const std::string& label = "label", const std::string& loss = "output") {
  try {
    compile(g, label, false, loss);
  } catch (const of::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("own loss: SoftmaxCrossEntropyLoss on N,C,H,W becomes rows of classes with its weights, ignored label and mean", "[compiler]") {
  Compilation c = compile(own_loss_model({}));
  const Graph& g = c.graph;
  const Node& loss = node_of(g, "softmax_cross_entropy");
  REQUIRE(loss.inputs.size() == 3);
  CHECK(desc(g, loss.inputs[0]).shape == of::Shape{40, 3});
  CHECK(desc(g, loss.inputs[1]).shape == of::Shape{40});
  CHECK(g.values[size_t(loss.inputs[2])].name == "criterion.weight");
  CHECK(loss.kernel_attrs.get_int("ignore_index", -100) == 255);
  CHECK(!loss.kernel_attrs.has("sum"));
  CHECK(node_of(g, "transpose").kernel_attrs.get_ints("perm") == std::vector<int64_t>{0, 2, 3, 1});
  // The backward starts at the model's output and reaches the weight; the class weights are data.
  const Node& grad = node_of(g, "softmax_cross_entropy_grad");
  REQUIRE(grad.inputs.size() == 4);
  CHECK(grad.inputs[3] == loss.inputs[2]);
  CHECK(grad.kernel_attrs.get_int("ignore_index", -100) == 255);
  REQUIRE(c.training.weights.size() == 1);
  CHECK(g.values[size_t(c.training.weights[0].first)].name == "scale.weight");
  CHECK(c.training.label == "label");
  CHECK(g.outputs.size() == 1);
  CHECK(g.values[size_t(g.outputs[0])].name == "loss");
}

TEST_CASE("own loss: reduction sum on N,C without class weights, and the evaluation plan keeps the loss", "[compiler]") {
  LossModel m;
  m.x = {6, 4};
  m.reduction = "sum";
  m.class_weights = false;
  m.ignore_index = -100;
  Compilation c = compile(own_loss_model(m));
  const Node& loss = node_of(c.graph, "softmax_cross_entropy");
  CHECK(loss.inputs.size() == 2);
  CHECK(loss.kernel_attrs.get_int("sum", 0) == 1);
  CHECK(!loss.kernel_attrs.has("ignore_index"));
  CHECK(node_of(c.graph, "softmax_cross_entropy_grad").kernel_attrs.get_int("sum", 0) == 1);
  Compilation e = compile(own_loss_model(m), "label", true);
  CHECK(std::none_of(e.graph.nodes.begin(), e.graph.nodes.end(), [](const Node& n) { return n.kernel == "softmax_cross_entropy_grad"; }));
  REQUIRE(e.graph.outputs.size() == 1);
  CHECK(e.graph.values[size_t(e.graph.outputs[0])].name == "loss");
}

TEST_CASE("own loss: what cannot be trained faithfully is refused in one line naming it", "[compiler]") {
  LossModel none;
  none.reduction = "none";
  CHECK_THAT(error_of(own_loss_model(none)), Catch::Contains("xent") && Catch::Contains("reduction 'none'"));
  LossModel log_prob;
  log_prob.log_prob_read = true;
  CHECK_THAT(error_of(own_loss_model(log_prob)), Catch::Contains("log_prob"));
  CHECK_THAT(error_of(own_loss_model({}), "target"),
             Catch::Contains("--label 'target' is not an input of the model (its inputs: input, label)"));
  // A model returning logits, not a loss.
  Graph logits = own_loss_model({});
  const ValueId y = logits.nodes[0].outputs[0];
  logits.values[size_t(logits.outputs[0])].graph_output = false;
  logits.outputs = {y};
  logits.values[size_t(y)].graph_output = true;
  logits.nodes.pop_back();
  relink(logits);
  CHECK_THAT(error_of(logits), Catch::Contains("the output 'logits' is f32 [2,3,4,5], not a loss"));
}

TEST_CASE("own loss: a model with several outputs names its loss, and the plan keeps only that one", "[compiler]") {
  Graph two = own_loss_model({});  // (loss, logits), as a Hugging Face model returns them
  const ValueId logits = two.nodes[0].outputs[0];
  two.outputs.push_back(logits);
  two.values[size_t(logits)].graph_output = true;
  CHECK_THAT(error_of(two), Catch::Contains("the model has 2 outputs (loss, logits): name its loss (--loss output:name=N)"));
  CHECK_THAT(error_of(two, "label", "output:name=logit"), Catch::Contains("the model has no output 'logit' (its outputs: loss, logits)"));
  Compilation c = compile(two, "label", false, "output:name=loss");
  REQUIRE(c.graph.outputs.size() == 1);
  CHECK(c.graph.values[size_t(c.graph.outputs[0])].name == "loss");
  CHECK(!c.graph.values[size_t(logits)].graph_output);
  CHECK(c.training.weights.size() == 1);
}

TEST_CASE("own loss: NegativeLogLikelihoodLoss becomes a weighted one-hot pick of the log-probabilities, its class weights untrained", "[compiler]") {
  LossModel m;
  m.op = "NegativeLogLikelihoodLoss";
  m.ignore_index = 1;  // a class: its rows are masked out
  Compilation c = compile(own_loss_model(m));
  const Graph& g = c.graph;
  auto count = [&](const std::string& op) {
    return std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  };
  CHECK(count("Equal") == 2);  // the labels against every class, and against ignore_index
  CHECK(count("Not") == 1);
  CHECK(count("Cast") == 1);
  CHECK(count("Div") >= 1);    // the mean: over the mask's (weighted) sum
  // Only the model's weight trains: the class weights are the criterion's data.
  REQUIRE(c.training.weights.size() == 1);
  CHECK(g.values[size_t(c.training.weights[0].first)].name == "scale.weight");
  CHECK(c.training.state == 1);
  // The same for SoftmaxCrossEntropyLoss's class weights.
  Compilation x = compile(own_loss_model({}));
  CHECK(x.training.state == 1);
  LossModel none = m;
  none.reduction = "none";
  CHECK_THAT(error_of(own_loss_model(none)), Catch::Contains("reduction 'none'"));
}
