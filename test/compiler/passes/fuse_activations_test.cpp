// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

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
