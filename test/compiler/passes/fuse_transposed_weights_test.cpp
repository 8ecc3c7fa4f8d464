// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

static long count(const Graph& g, const std::string& op) {
  return long(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

// linear3d_train: x [4,5,16] -> Linear(16,32) -> ReLU -> Linear(32,8, bias=False), exported with
// the training recipe: each Linear is MatMul(x, Transpose(weight)).
TEST_CASE("fuse_transposed_weights: nn.Linear on 3-D input reads its weight without a Transpose", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("export/linear3d_train.onnx"))};
  REQUIRE(InferShapes().run(c));
  REQUIRE(count(c.graph, "Transpose") == 2);
  REQUIRE(count(c.graph, "MatMul") == 2);
  REQUIRE(FuseTransposedWeights().run(c));
  verify(c.graph, "fuse-transposed-weights");
  CHECK(count(c.graph, "Transpose") == 0);
  CHECK(count(c.graph, "MatMul") == 0);
  REQUIRE(count(c.graph, "MatMulTransB") == 2);
  for (const Node& n : c.graph.nodes) {
    if (n.op_type != "MatMulTransB") continue;
    CHECK(n.domain == "of");
    CHECK(n.kernel == "matmul_tb");
    const Value& w = c.graph.values[size_t(n.inputs[1])];
    CHECK(w.initializer);  // the weight itself, as the state_dict names it
    CHECK((w.name == "a.weight" || w.name == "b.weight"));
    CHECK(std::count(w.consumers.begin(), w.consumers.end(), NodeId(&n - c.graph.nodes.data())) == 1);
    CHECK(std::find(n.runtime_inputs.begin(), n.runtime_inputs.end(), n.inputs[1]) != n.runtime_inputs.end());
  }
  CHECK(FuseTransposedWeights().run(c) == false);  // a fixed point
}

TEST_CASE("fuse_transposed_weights: a Transpose another node also reads stays for it", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("export/linear3d_train.onnx"))};
  REQUIRE(InferShapes().run(c));
  Graph& g = c.graph;
  NodeId t = -1;
  for (NodeId i = 0; i < NodeId(g.nodes.size()); ++i)
    if (g.nodes[size_t(i)].op_type == "Transpose") t = i;
  REQUIRE(t >= 0);
  // The Transpose's output also leaves the graph.
  g.values[size_t(g.nodes[size_t(t)].outputs[0])].graph_output = true;
  g.outputs.push_back(g.nodes[size_t(t)].outputs[0]);
  REQUIRE(FuseTransposedWeights().run(c));
  verify(g, "fuse-transposed-weights");
  CHECK(count(g, "Transpose") == 1);
  CHECK(count(g, "MatMulTransB") == 2);
}

TEST_CASE("fuse_transposed_weights: the whole compile trains nn.Linear on 3-D input with no Transpose task", "[compiler]") {
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  Compilation c = compile_model(fixture("export/linear3d_train.onnx"), o);
  long transposes = 0, fused = 0;
  for (const Node& n : c.graph.nodes) {
    transposes += n.kernel == "transpose";
    fused += n.kernel == "matmul_tb";
  }
  CHECK(transposes == 0);
  CHECK(fused == 2);
}
