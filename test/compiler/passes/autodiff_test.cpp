// SPDX-License-Identifier: Apache-2.0
// Which tensors train: parameters under their state_dict names (through the Transposes the
// training export writes), never the exporter's folded copies silently; --freeze and --folded.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <algorithm>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include "compiler/passes/pass.h"

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
  // fuse-transposed-weights read the weights behind the Transposes directly: no Transpose task.
  int transposes = 0;
  for (const auto& t : c.tasks.tasks) transposes += t.op == "Transpose";
  CHECK(transposes == 0);
}

TEST_CASE("autodiff: a task that reads only a weight is paced by the source once a piece", "[compiler]") {
  // Without fuse-transposed-weights, each Linear's Transpose reads only its weight.
  Compilation c{.graph = import_onnx_file(fixture("export/linear3d_train.onnx")), .options = training()};
  REQUIRE(InferShapes().run(c));
  REQUIRE(Autodiff().run(c));
  AddOptimizer().run(c);
  Parallelize().run(c);
  REQUIRE(LowerToTasks().run(c));
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

TEST_CASE("add_optimizer: a train-mode BatchNorm gets a per-piece update of its running statistics", "[compiler]") {
  Compilation c = compile_model(fixture("export/bn_mlp_train.onnx"), training());
  CHECK(c.training.weights.size() == 6);  // fc1, bn (weight, bias), fc2: not the statistics
  CHECK(c.training.state == 3);           // running_mean, running_var, num_batches_tracked
  int updates = 0;
  for (const Node& n : c.graph.nodes)
    if (n.kernel == "batch_norm_stats_update") {
      ++updates;
      CHECK(n.state_per_piece);
      CHECK(n.inplace == std::vector<int32_t>{2, 3, 4});
      CHECK(c.graph.values[size_t(n.inputs[4])].name == "bn.num_batches_tracked");
    }
  CHECK(updates == 1);
  // Its register's readers read one version per piece, the optimizer's once per step.
  CompileOptions o = training();
  o.micro_batches = 4;
  Compilation k = compile_model(fixture("export/bn_mlp_train.onnx"), o);
  for (const auto& r : k.tasks.regsts)
    if (r.persistent) {
      const auto& producer = k.tasks.tasks[size_t(r.producer)];
      CHECK(r.pieces_per_version == (producer.kernel == "batch_norm_stats_update" ? 1 : 4));
    }
  // Under data parallelism (torch's DDP): each device normalizes its own half with its own
  // statistics and updates its own running copy; nothing moves the statistics between devices.
  o.micro_batches = 1;
  o.devices = 2;
  o.dp = 2;
  Compilation dp = compile_model(fixture("export/bn_mlp_train.onnx"), o);
  std::map<std::string, std::set<int32_t>> devices_of;
  for (const auto& t : dp.tasks.tasks) devices_of[t.kernel].insert(t.device);
  // (split-batch-norm makes each device's forward its statistics, then their application.)
  CHECK(devices_of["batch_norm_stats"] == std::set<int32_t>{0, 1});
  CHECK(devices_of["batch_norm_apply"] == std::set<int32_t>{0, 1});
  CHECK(devices_of["batch_norm_train_grad"] == std::set<int32_t>{0, 1});
  CHECK(devices_of["batch_norm_stats_update"] == std::set<int32_t>{0, 1});
  for (const auto& b : dp.parallel.boxings) {
    INFO(b.tensor);
    CHECK(b.tensor.find("saved_") == std::string::npos);
    CHECK(b.tensor.find("batch_var") == std::string::npos);
    CHECK(b.tensor.find("running_") == std::string::npos);
  }
}
