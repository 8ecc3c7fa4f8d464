// SPDX-License-Identifier: Apache-2.0
// fuse-masked-softmax on nanoGPT's causal self-attention as torch exports it for training
// (test/fixtures/make_export_fixtures.py): masked_fill(mask == 0, -inf) then softmax becomes one
// of.MaskedSoftmax node, its gradient one masked_softmax_grad; what is not that pattern stays.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

long count(const Graph& g, const std::string& op) {
  return long(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

Compilation shaped() {
  Compilation c{.graph = import_onnx_file(fixture("export/attention_train.onnx"))};
  REQUIRE(InferShapes().run(c));
  REQUIRE(count(c.graph, "Where") == 1);
  REQUIRE(count(c.graph, "Softmax") == 1);
  return c;
}

}  // namespace

TEST_CASE("fuse_masked_softmax: masked_fill(-inf) then softmax is one node reading the scores and the mask", "[compiler]") {
  Compilation c = shaped();
  REQUIRE(FuseMaskedSoftmax().run(c));
  verify(c.graph, "fuse-masked-softmax");
  CHECK(count(c.graph, "Where") == 0);
  CHECK(count(c.graph, "Softmax") == 0);
  REQUIRE(count(c.graph, "MaskedSoftmax") == 1);
  const Node& n = *std::find_if(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& x) { return x.op_type == "MaskedSoftmax"; });
  CHECK(n.domain == "of");
  CHECK(n.kernel == "masked_softmax");
  // Where(mask == 0, -inf, scores): masked where the condition holds.
  CHECK(n.kernel_attrs.get_int("masked", -1) == 1);
  REQUIRE(n.inputs.size() == 2);
  CHECK(c.graph.values[size_t(n.inputs[0])].desc.shape == of::Shape{2, 2, 4, 4});
  CHECK(c.graph.values[size_t(n.inputs[1])].desc.dtype == of::DType::bool_);
  CHECK(c.graph.values[size_t(n.inputs[1])].desc.shape == of::Shape{1, 1, 4, 4});
  for (ValueId v : n.inputs) {
    const auto& readers = c.graph.values[size_t(v)].consumers;
    CHECK(std::count(readers.begin(), readers.end(), NodeId(&n - c.graph.nodes.data())) == 1);
  }
  CHECK(FuseMaskedSoftmax().run(c) == false);  // a fixed point
}

TEST_CASE("fuse_masked_softmax: a masked copy another node also reads, or a fill that is not -inf, stays", "[compiler]") {
  {
    Compilation c = shaped();
    Graph& g = c.graph;
    const Node& w = *std::find_if(g.nodes.begin(), g.nodes.end(), [](const Node& x) { return x.op_type == "Where"; });
    g.values[size_t(w.outputs[0])].graph_output = true;
    g.outputs.push_back(w.outputs[0]);
    CHECK(FuseMaskedSoftmax().run(c) == false);
  }
  {
    Compilation c = shaped();
    Graph& g = c.graph;
    Node& w = *std::find_if(g.nodes.begin(), g.nodes.end(), [](const Node& x) { return x.op_type == "Where"; });
    // The fill read as the scores: x and the condition's other branch swapped, so neither branch is -inf.
    std::swap(w.inputs[1], w.inputs[2]);
    w.inputs[2] = w.inputs[1];
    CHECK(FuseMaskedSoftmax().run(c) == false);
  }
}

TEST_CASE("fuse_masked_softmax: the whole training compile runs one masked softmax and one gradient act, no where", "[compiler]") {
  CompileOptions o;
  o.train = true;
  o.loss = "mse";
  Compilation c = compile_model(fixture("export/attention_train.onnx"), o);
  long where = 0, softmax = 0, masked = 0, masked_grad = 0;
  for (const Node& n : c.graph.nodes) {
    where += n.kernel == "where";
    softmax += n.kernel == "softmax" || n.kernel == "softmax_grad";
    masked += n.kernel == "masked_softmax";
    masked_grad += n.kernel == "masked_softmax_grad";
  }
  CHECK(where == 0);
  CHECK(softmax == 0);
  CHECK(masked == 1);
  CHECK(masked_grad == 1);
}
