// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

TEST_CASE("fuse_activations: the MLP's Relus fold into their Gemms", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("mlp.onnx"))};
  REQUIRE(InferShapes().run(c));
  REQUIRE(c.graph.nodes.size() == 5);
  REQUIRE(FuseActivations().run(c));
  verify(c.graph, "fuse-activations");
  REQUIRE(c.graph.nodes.size() == 3);
  CHECK(c.graph.nodes[0].kernel_attrs.get_str("activation") == "relu");
  CHECK(c.graph.nodes[1].kernel_attrs.get_str("activation") == "relu");
  CHECK_FALSE(c.graph.nodes[2].kernel_attrs.has("activation"));  // the logits layer had no Relu
  // The Gemm now writes what the Relu wrote, and the next Gemm reads it.
  CHECK(c.graph.nodes[1].inputs[0] == c.graph.nodes[0].outputs[0]);
  CHECK(c.graph.values[c.graph.nodes[0].outputs[0]].producer == 0);
  CHECK(FuseActivations().run(c) == false);  // a fixed point: nothing left to fuse
}

TEST_CASE("fuse_activations: a Relu on a value that others also read is left alone", "[compiler]") {
  // add_same: Add has no fusable kernel; relu case: its input is a graph input. Neither changes.
  for (const char* model : {"ops/relu.onnx", "ops/add_same.onnx"}) {
    Compilation c{.graph = import_onnx_file(fixture(model))};
    InferShapes().run(c);
    CHECK(FuseActivations().run(c) == false);
  }
}

namespace {

// The MLP after infer-shapes: fc1 (gemm) -> relu1 -> fc2 (gemm) -> relu2 -> fc3 (gemm).
Compilation mlp() {
  Compilation c{.graph = import_onnx_file(fixture("mlp.onnx"))};
  REQUIRE(InferShapes().run(c));
  REQUIRE(c.graph.nodes.size() == 5);
  REQUIRE(c.graph.nodes[0].kernel == "gemm");
  REQUIRE(c.graph.nodes[1].kernel == "relu");
  REQUIRE(c.graph.nodes[3].kernel == "relu");
  return c;
}

}  // namespace

TEST_CASE("fuse_activations: a Relu whose input has another reader is not fused", "[compiler]") {
  Compilation c = mlp();
  Graph& g = c.graph;
  // A second reader of fc1's output: a Relu of its own, whose output is a graph output.
  const ValueId x = g.nodes[0].outputs[0];
  Node extra = g.nodes[1];
  extra.name = "extra_reader";
  const ValueId y = g.add_value("extra_out");
  g.values[y].desc = g.values[x].desc;
  g.values[y].known = true;
  g.values[y].graph_output = true;
  extra.outputs = {y};
  g.nodes.push_back(extra);
  g.values[y].producer = NodeId(g.nodes.size() - 1);
  g.values[x].consumers.push_back(NodeId(g.nodes.size() - 1));
  g.outputs.push_back(y);
  verify(g, "test setup");
  REQUIRE(FuseActivations().run(c));  // fc2's Relu still fuses
  verify(g, "fuse-activations");
  REQUIRE(g.nodes.size() == 5);
  // fc1 keeps its plain output, which both Relus still read.
  CHECK_FALSE(g.nodes[0].kernel_attrs.has("activation"));
  CHECK(g.nodes[0].outputs[0] == x);
  CHECK(g.values[x].consumers.size() == 2);
  for (NodeId n : g.values[x].consumers) CHECK(g.nodes[n].kernel == "relu");
  CHECK(g.nodes[2].kernel_attrs.get_str("activation") == "relu");
  CHECK(FuseActivations().run(c) == false);
}

TEST_CASE("fuse_activations: a Relu whose input is a graph output is not fused", "[compiler]") {
  Compilation c = mlp();
  Graph& g = c.graph;
  const ValueId x = g.nodes[0].outputs[0];  // fc1's output, read only by relu1, is also returned
  g.values[x].graph_output = true;
  g.outputs.push_back(x);
  verify(g, "test setup");
  REQUIRE(FuseActivations().run(c));  // fc2's Relu still fuses
  verify(g, "fuse-activations");
  REQUIRE(g.nodes.size() == 4);
  CHECK_FALSE(g.nodes[0].kernel_attrs.has("activation"));
  CHECK(g.nodes[0].outputs[0] == x);  // the graph output still holds fc1's output before the ReLU
  CHECK(g.values[x].producer == 0);
  REQUIRE(g.values[x].consumers.size() == 1);
  CHECK(g.nodes[g.values[x].consumers[0]].kernel == "relu");
  CHECK(g.nodes[2].kernel_attrs.get_str("activation") == "relu");
}

TEST_CASE("fuse_gelu: torch's erf GELU (Div, Erf, Add, Mul, Mul) becomes one Gelu node", "[compiler]") {
  // gelu_mlp_train: Linear -> GELU -> Linear, the training recipe's export.
  Compilation c{.graph = import_onnx_file(fixture("export/gelu_mlp_train.onnx"))};
  auto count = [&](const std::string& op) {
    return std::count_if(c.graph.nodes.begin(), c.graph.nodes.end(), [&](const Node& n) { return n.op_type == op; });
  };
  REQUIRE(count("Erf") == 1);
  const size_t before = c.graph.nodes.size();
  REQUIRE(FuseGelu().run(c));
  verify(c.graph, "fuse-gelu");
  CHECK(count("Erf") == 0);
  CHECK(count("Div") == 0);
  REQUIRE(count("Gelu") == 1);
  CHECK(c.graph.nodes.size() == before - 4);
  const Node& gelu = *std::find_if(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& n) { return n.op_type == "Gelu"; });
  CHECK(gelu.name.find("Gelu") != std::string::npos);  // named after the Erf it replaced
  REQUIRE(gelu.inputs.size() == 1);
  // The Gelu reads the first Linear's output, and the second Linear reads the Gelu's.
  CHECK(c.graph.values[gelu.inputs[0]].producer >= 0);
  CHECK(c.graph.values[gelu.outputs[0]].consumers.size() == 1);
  CHECK(FuseGelu().run(c) == false);
  REQUIRE(InferShapes().run(c));  // folds the constants' nodes away: find the Gelu again
  for (const Node& n : c.graph.nodes)
    if (n.op_type == "Gelu") CHECK(n.kernel == "gelu");
}

TEST_CASE("fuse_gelu: a chain whose intermediate is read elsewhere is left alone", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("export/gelu_mlp_train.onnx"))};
  auto erf = std::find_if(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& n) { return n.op_type == "Erf"; });
  REQUIRE(erf != c.graph.nodes.end());
  c.graph.values[erf->outputs[0]].graph_output = true;  // erf(x / sqrt 2) is wanted too
  CHECK(FuseGelu().run(c) == false);
  // And a model without GELU has nothing to fuse.
  Compilation mlp{.graph = import_onnx_file(fixture("mlp.onnx"))};
  CHECK(FuseGelu().run(mlp) == false);
}
