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
