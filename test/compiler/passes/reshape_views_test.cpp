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
