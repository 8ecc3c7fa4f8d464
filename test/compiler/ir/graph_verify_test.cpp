// SPDX-License-Identifier: Apache-2.0
// verify(): the check run after every compiler pass. A broken graph is named, never read out of
// range while the message is made.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "compiler/ir/graph.h"

using namespace of::compiler;

namespace {

// x -> Relu -> y, with y the graph's output.
Graph relu_graph() {
  Graph g;
  const ValueId x = g.add_value("x");
  g.values[size_t(x)].graph_input = true;
  const ValueId y = g.add_value("y");
  g.values[size_t(y)].producer = 0;
  g.values[size_t(x)].consumers.push_back(0);
  g.nodes.push_back(Node{.name = "relu", .op_type = "Relu", .inputs = {x}, .outputs = {y}});
  g.outputs.push_back(y);
  return g;
}

}  // namespace

TEST_CASE("graph verify: a well-formed graph passes", "[graph]") {
  const Graph g = relu_graph();
  CHECK_NOTHROW(verify(g, "test"));
}

TEST_CASE("graph verify: an input id out of range is named without reading past the values", "[graph]") {
  Graph g = relu_graph();
  g.nodes[0].inputs[0] = 1000000;
  CHECK_THROWS_WITH(verify(g, "test"), Catch::Contains("node 'relu' input id 1000000 out of range") &&
                                           Catch::Contains("after pass 'test'"));
}

TEST_CASE("graph verify: a value read before it is produced is named", "[graph]") {
  Graph g = relu_graph();
  g.nodes[0].inputs[0] = 1;  // reads its own output
  CHECK_THROWS_WITH(verify(g, "test"), Catch::Contains("node 'relu' reads 'y' before it is produced"));
}

TEST_CASE("graph verify: an output whose producer is another node is named", "[graph]") {
  Graph g = relu_graph();
  g.values[1].producer = 5;
  CHECK_THROWS_AS(verify(g, "test"), std::logic_error);
  CHECK_THROWS_WITH(verify(g, "test"), Catch::Contains("value 'y' does not name node 'relu' as producer"));
}
