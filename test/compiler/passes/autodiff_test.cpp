// SPDX-License-Identifier: Apache-2.0
// Which tensors train: parameters under their state_dict names (through the Transposes the
// training export writes), never the exporter's folded copies silently; --freeze and --folded.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

static CompileOptions training() {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  return o;
}

static std::vector<std::string> trained(const Compilation& c) {
  std::vector<std::string> names;
  for (auto [w, dw] : c.training.weights) names.push_back(c.graph.values[size_t(w)].name);
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("autodiff: the training export trains every parameter, Transposes included", "[compiler]") {
  Compilation c = compile_model(fixture("export/linear3d_train.onnx"), training());
  CHECK(trained(c) == std::vector<std::string>{"a.bias", "a.weight", "b.weight"});
  CHECK(c.training.frozen == 0);
  // A task that reads only a weight (the Transpose) is paced by the source's register, once a piece.
  int paced = 0;
  for (const auto& t : c.tasks.tasks)
    if (t.op == "Transpose" && std::find(t.in_regsts.begin(), t.in_regsts.end(), 0) != t.in_regsts.end()) ++paced;
  CHECK(paced == 2);
}

TEST_CASE("autodiff: the default eval export is refused for training, naming the folded tensors", "[compiler]") {
  REQUIRE_THROWS_WITH(compile_model(fixture("export/linear3d_eval.onnx"), training()),
                      Catch::Contains("linear3d_eval.onnx") && Catch::Contains("2 float initializers named by the exporter") &&
                          Catch::Contains("onnx::MatMul_") && Catch::Contains("[16,32]") &&
                          Catch::Contains("do_constant_folding=False"));
  // The same model compiles for inference: nothing is trained there.
  CHECK_NOTHROW(compile_model(fixture("export/linear3d_eval.onnx"), CompileOptions{}));
}

TEST_CASE("autodiff: folded tensors train or freeze when told, --freeze keeps named ones fixed", "[compiler]") {
  CompileOptions o = training();
  o.folded = "freeze";
  Compilation frozen = compile_model(fixture("export/linear3d_eval.onnx"), o);
  CHECK(trained(frozen) == std::vector<std::string>{"a.bias"});
  CHECK(frozen.training.frozen == 2);
  o.folded = "train";
  CHECK(trained(compile_model(fixture("export/linear3d_eval.onnx"), o)).size() == 3);

  CompileOptions f = training();
  f.freeze = {"a.*"};
  Compilation c = compile_model(fixture("export/linear3d_train.onnx"), f);
  CHECK(trained(c) == std::vector<std::string>{"b.weight"});
  CHECK(c.training.frozen == 2);
  f.freeze = {"nothing.*"};
  REQUIRE_THROWS_WITH(compile_model(fixture("export/linear3d_train.onnx"), f), Catch::Contains("'nothing.*' matches no initializer"));
}
