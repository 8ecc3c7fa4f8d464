// SPDX-License-Identifier: Apache-2.0
// What can never run is refused when the plan is compiled, in one line naming the option, node
// or input: more pipeline stages than forward ops, stages left empty, too many micro-batches,
// arenas beyond an address space, a batch of 0, an opset newer than the importer knows.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

static CompileOptions pipeline(int32_t pp) {
  CompileOptions o;
  o.devices = pp;
  o.pp = pp;
  return o;
}

TEST_CASE("refusals: more pipeline stages than forward ops", "[compiler]") {
  REQUIRE_THROWS_WITH(compile_model(fixture("mlp.onnx"), pipeline(8)),
                      "--pp: 8 pipeline stages, but the model has 5 forward ops; each stage needs at least one");
}

TEST_CASE("refusals: no pipeline stage is left empty when there are ops enough", "[compiler]") {
  for (int32_t pp = 2; pp <= 5; ++pp) {
    INFO("pp " << pp);
    Compilation c = compile_model(fixture("mlp.onnx"), pipeline(pp));
    std::vector<int> tasks_on(size_t(pp), 0);
    for (const auto& t : c.tasks.tasks)  // the model's ops, not boxing (slice, copy, concat)
      if (t.kind == of::plan::TaskKind::compute && (t.kernel == "gemm" || t.kernel == "relu")) ++tasks_on[size_t(t.stage)];
    for (int32_t s = 0; s < pp; ++s) CHECK(tasks_on[size_t(s)] > 0);
  }
}

TEST_CASE("refusals: micro-batches beyond the bound", "[compiler]") {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.micro_batches = kMaxMicroBatches + 1;
  REQUIRE_THROWS_WITH(compile_model(fixture("mlp.onnx"), o),
                      "--micro-batches: 65537 is outside [1, 65536] (each is a whole batch of the model; a step sums them)");
}

TEST_CASE("refusals: an arena beyond the address space", "[compiler]") {
  REQUIRE_THROWS_WITH(compile_model(fixture("hostile/huge_arena.onnx"), {}),
                      Catch::StartsWith(fixture("hostile/huge_arena.onnx") + ": device cpu:0 needs 16.0 PiB") &&
                          Catch::Contains("more than the 128.0 TiB a process can address"));
}

TEST_CASE("refusals: a plan beyond --device-memory names the device and its three largest items", "[compiler]") {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.device_memory = 1 << 20;
  REQUIRE_THROWS_WITH(compile_model(fixture("mlp.onnx"), o),
                      Catch::StartsWith("--device-memory: device cpu:0 needs ") && Catch::Contains("more than the 1.0 MiB given; largest: ") && Catch::Contains("'update/fc2.weight' 4.0 MiB, ") &&
                          Catch::Contains("'update/fc1.weight' 3.1 MiB"));
}

TEST_CASE("refusals: a batch of 0 and an opset from the future", "[compiler]") {
  REQUIRE_THROWS_WITH(compile_model(fixture("hostile/batch_zero.onnx"), {}),
                      fixture("hostile/batch_zero.onnx") + ": input 'x': has shape [0,4]: a batch of 0 samples (dimension 0) can never run");
  REQUIRE_THROWS_WITH(compile_model(fixture("hostile/new_opset.onnx"), {}),
                      fixture("hostile/new_opset.onnx") + ": opset 99 is newer than this ofc knows (13..18); export with opset_version <= 18");
}
