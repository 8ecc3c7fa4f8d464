// SPDX-License-Identifier: Apache-2.0
// --clip-grad-norm: every update reads its gradient times one coefficient, min(1, max_norm /
// (norm + 1e-6)) of the global 2-norm of all gradients (torch.nn.utils.clip_grad_norm_), whose
// square sums are added pairwise; the nodes stay in a topological order after add-optimizer
// places updates early. --clip-grad-value: a Clip per gradient (torch.nn.utils.clip_grad_value_).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "compiler/compile.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

Compilation compile_mlp(int32_t micro_batches) {
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  o.optimizer = "adamw:lr=0.001";
  o.clip_grad_norm = 0.5;
  o.micro_batches = micro_batches;
  return compile_before_parallelize(fixture("mlp.onnx"), o);
}

const Node& producer(const Graph& g, ValueId v) {
  REQUIRE(g.values[size_t(v)].producer >= 0);
  return g.nodes[size_t(g.values[size_t(v)].producer)];
}

}  // namespace

TEST_CASE("clip grad norm: each update reads its gradient times the clipping coefficient of the global norm", "[compiler]") {
  for (int32_t k : {1, 2}) {
    INFO("micro-batches " << k);
    const Compilation c = compile_mlp(k);
    const Graph& g = c.graph;
    size_t updates = 0, squares = 0, sums = 0, adds = 0;
    ValueId coef = kNoValue;
    for (const Node& n : g.nodes) {
      squares += n.name.size() > 7 && n.name.compare(n.name.size() - 7, 7, "/square") == 0;
      sums += n.name.size() > 4 && n.name.compare(n.name.size() - 4, 4, "/sum") == 0;
      adds += n.name.rfind("clip_grad_norm/total/", 0) == 0;
      if (n.kernel != "adam_update") continue;
      ++updates;
      const Node& scale = producer(g, n.inputs[1]);
      CHECK(scale.name == "clip_grad_norm/" + g.values[size_t(n.inputs[0])].name);
      CHECK(scale.kernel == "mul");
      // The gradient itself: the backward pass's (made before the update, by no clipping node),
      // or with micro-batches their mean.
      const Node& made = producer(g, scale.inputs[0]);
      if (k > 1) CHECK(made.kernel == "accumulate");
      else CHECK((made.kernel != "accumulate" && made.forward >= 0 && made.name.rfind("clip_grad_norm/", 0) != 0));
      if (coef == kNoValue) coef = scale.inputs[1];
      CHECK(scale.inputs[1] == coef);  // one coefficient for all
    }
    CHECK(updates == 6);
    CHECK(squares == 6);
    CHECK(sums == 6);
    CHECK(adds == 5);  // six sums added pairwise
    const Node& min = producer(g, coef);
    CHECK(min.kernel == "min");
    const Node& div = producer(g, min.inputs[0]);
    CHECK(div.kernel == "div");
    CHECK(producer(g, producer(g, div.inputs[1]).inputs[0]).kernel == "sqrt");
    // Topological: every node's inputs are made before it.
    std::vector<bool> made(g.values.size(), false);
    for (size_t v = 0; v < g.values.size(); ++v) made[v] = g.values[v].producer < 0;
    for (const Node& n : g.nodes) {
      for (ValueId v : n.inputs) CHECK((v == kNoValue || made[size_t(v)]));
      for (ValueId v : n.outputs) made[size_t(v)] = true;
    }
  }
}

TEST_CASE("clip grad value: each update reads its gradient clamped to the value, after the micro-batches' mean", "[compiler]") {
  for (int32_t k : {1, 2}) {
    INFO("micro-batches " << k);
    CompileOptions o;
    o.train = true;
    o.loss = "cross_entropy";
    o.optimizer = "sgd:lr=0.1";
    o.clip_grad_value = 0.25;
    o.micro_batches = k;
    const Compilation c = compile_before_parallelize(fixture("mlp.onnx"), o);
    const Graph& g = c.graph;
    size_t updates = 0;
    for (const Node& n : g.nodes) {
      if (n.kernel != "sgd_update") continue;
      ++updates;
      const Node& clip = producer(g, n.inputs[1]);
      CHECK(clip.name == "clip_grad_value/" + g.values[size_t(n.inputs[0])].name);
      CHECK(clip.kernel == "clip");
      CHECK(clip.kernel_attrs.get_float("min", 0) == -0.25f);
      CHECK(clip.kernel_attrs.get_float("max", 0) == 0.25f);
      if (k > 1) CHECK(producer(g, clip.inputs[0]).kernel == "accumulate");
    }
    CHECK(updates == 6);
  }
  CompileOptions both;
  both.train = true;
  both.loss = "cross_entropy";
  both.clip_grad_norm = 1;
  both.clip_grad_value = 1;
  CHECK_THROWS_WITH(compile_before_parallelize(fixture("mlp.onnx"), both), Catch::Contains("--clip-grad-norm together"));
}
