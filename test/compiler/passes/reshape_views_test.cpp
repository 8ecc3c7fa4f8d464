// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

static bool has_view(const Node& n) {
  return std::any_of(n.runtime_views.begin(), n.runtime_views.end(), [](const of::Shape& v) { return !v.empty(); });
}

// linear3d_train: x [4,5,16] -> Linear(16,32) -> ReLU -> Linear(32,8, bias=False) -> reshape [4,40].
TEST_CASE("reshape_views: every reshape of a training plan becomes a view", "[compiler]") {
  // The output reshape feeds the loss (the training plan's output), so it goes too.
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  Compilation c = compile_model(fixture("export/linear3d_train.onnx"), o);
  long kept = 0, viewed = 0;
  for (const Node& n : c.graph.nodes) {
    viewed += has_view(n);
    if (n.op_type != "Reshape" || n.kernel != "copy") continue;
    ++kept;
  }
  CHECK(kept == 0);
  CHECK(viewed >= 3);  // the loss reads the logits, and the gradients of both Linears their rows
  // Each view reaches the plan with the shape the reader expects and as many elements as its blob.
  long task_views = 0;
  for (const auto& t : c.tasks.tasks)
    for (const auto& in : t.inputs) {
      if (in.view.empty()) continue;
      ++task_views;
      CHECK(in.kind == of::plan::InputKind::regst);
      CHECK(of::numel(in.view) == of::numel(c.tasks.regsts[size_t(in.id)].blobs[size_t(in.blob)].desc.shape));
    }
  CHECK(task_views >= viewed);
}

TEST_CASE("reshape_views: a reshape whose output leaves the graph stays a copy", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("export/linear3d_train.onnx"))};
  REQUIRE(InferShapes().run(c));
  const long reshapes = long(std::count_if(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& n) { return n.op_type == "Reshape"; }));
  REQUIRE(reshapes == 1);
  CHECK(ReshapeViews().run(c) == false);
}

TEST_CASE("reshape_views: a reader with a view of its own keeps it when the reshape before it goes", "[compiler]") {
  // x [10] -> Reshape to [10,1] (a copy) -> a concat that reads it flat, as a gradient bucket's
  // pack reads each gradient: with the reshape gone the concat reads x, still as [10].
  Graph g;
  const auto value = [&](const std::string& name, of::Shape s) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = of::TensorDesc{std::move(s), of::DType::f32};
    g.values[size_t(v)].known = true;
    return v;
  };
  const ValueId x = value("x", {10}), y = value("y", {10, 1}), z = value("z", {12}), w = value("w", {2});
  g.values[size_t(x)].graph_input = true;
  g.values[size_t(w)].graph_input = true;
  g.inputs = {x, w};
  g.nodes.push_back(Node{.name = "reshape", .op_type = "Reshape", .inputs = {x}, .outputs = {y}, .kernel = "copy", .runtime_inputs = {x}});
  Node concat{.name = "pack", .op_type = "Concat", .inputs = {y, w}, .outputs = {z}, .kernel = "concat", .runtime_inputs = {y, w}};
  concat.runtime_views = {of::Shape{10}, of::Shape{2}};
  g.nodes.push_back(std::move(concat));
  g.values[size_t(z)].graph_output = true;
  g.outputs = {z};
  relink(g);
  Compilation c{.graph = std::move(g)};
  REQUIRE(ReshapeViews().run(c));
  const auto pack = std::find_if(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& n) { return n.name == "pack"; });
  REQUIRE(pack != c.graph.nodes.end());
  CHECK(pack->runtime_inputs[0] == x);
  CHECK(pack->runtime_views[0] == of::Shape{10});
}
