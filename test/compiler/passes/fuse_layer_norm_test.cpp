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

static std::vector<const Node*> of_type(const Graph& g, const std::string& op) {
  std::vector<const Node*> out;
  for (const Node& n : g.nodes)
    if (n.op_type == op) out.push_back(&n);
  return out;
}

// ln_mlp_train (opset 14): Linear -> LayerNorm(16) -> Linear -> LayerNorm((3,4)).
TEST_CASE("fuse_layer_norm: torch's written-out LayerNorm becomes one LayerNormalization node", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("export/ln_mlp_train.onnx"))};
  REQUIRE(count(c.graph, "ReduceMean") == 4);
  REQUIRE(count(c.graph, "LayerNormalization") == 0);
  REQUIRE(FuseLayerNorm().run(c));
  verify(c.graph, "fuse-layer-norm");
  const std::vector<const Node*> lns = of_type(c.graph, "LayerNormalization");
  REQUIRE(lns.size() == 2);
  // ln1 reads x, ln1.weight and ln1.bias; over the last dim, torch's eps.
  const Node& ln1 = *lns[0];
  CHECK(ln1.name.find("LayerNormalization") != std::string::npos);  // named after its first ReduceMean
  REQUIRE(ln1.inputs.size() == 3);
  CHECK(c.graph.values[ln1.inputs[1]].name == "ln1.weight");
  CHECK(c.graph.values[ln1.inputs[2]].name == "ln1.bias");
  CHECK(ln1.attrs.get_int("axis", 0) == -1);
  CHECK(ln1.attrs.get_float("epsilon", 0) == Approx(1e-5f));
  CHECK(c.graph.values[ln1.inputs[0]].producer >= 0);  // fc1's output
  for (const char* gone : {"ReduceMean", "Sub", "Pow", "Sqrt", "Div"}) CHECK(count(c.graph, gone) == 0);
  // ln2 normalizes the last two dims.
  const Node& ln2 = *lns[1];
  REQUIRE(ln2.inputs.size() == 3);
  CHECK(c.graph.values[ln2.inputs[1]].name == "ln2.weight");
  CHECK(ln2.attrs.get_int("axis", 0) == -2);
  CHECK(c.graph.values[ln2.outputs[0]].graph_output);
  CHECK(FuseLayerNorm().run(c) == false);
  REQUIRE(InferShapes().run(c));
  for (const Node& n : c.graph.nodes)
    if (n.op_type == "LayerNormalization") CHECK(n.kernel == "layer_norm");
}

TEST_CASE("fuse_layer_norm: a chain whose intermediate is read elsewhere is left alone", "[compiler]") {
  for (const char* wanted : {"Pow", "Sqrt", "Div"}) {
    Compilation c{.graph = import_onnx_file(fixture("export/ln_mlp_train.onnx"))};
    for (const Node& n : c.graph.nodes)
      if (n.op_type == wanted) c.graph.values[n.outputs[0]].graph_output = true;  // every such one is wanted
    INFO(wanted);
    CHECK(FuseLayerNorm().run(c) == false);
  }
}

TEST_CASE("fuse_layer_norm: a mean over a leading axis is not a LayerNorm", "[compiler]") {
  Compilation c{.graph = import_onnx_file(fixture("export/ln_mlp_train.onnx"))};
  for (Node& n : c.graph.nodes)
    if (n.op_type == "ReduceMean" && n.attrs.get_ints("axes") == std::vector<int64_t>{-1}) n.attrs.set_ints("axes", {0});
  // Only ln2 (over -2, -1) is left to fuse; ln1's two means no longer look like a LayerNorm.
  REQUIRE(FuseLayerNorm().run(c));
  CHECK(count(c.graph, "LayerNormalization") == 1);
  CHECK(count(c.graph, "ReduceMean") == 2);
}
