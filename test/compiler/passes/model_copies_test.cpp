// SPDX-License-Identifier: Apache-2.0
// ofc holds one copy of the model however many devices it plans for: after parallelize, no box
// of a weight, constant or optimizer state holds bytes of its own (the weights file stores the
// logical tensor), and optimizer state holds none at all (the runtime writes its zeros). The
// weights file is the same for any number of devices.
#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>

#include "common/file_util.h"
#include "compiler/compile.h"
#include "compiler/plan/plan_writer.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

Compilation compile_mlp(int32_t dp, int32_t tp) {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.optimizer = "adam";
  o.devices = dp * tp;
  o.dp = dp;
  o.tp = tp;
  return compile_model(fixture("mlp.onnx"), o);
}

// Bytes of compile-time contents the graph holds.
uint64_t held_bytes(const Graph& g) {
  uint64_t n = 0;
  for (const Value& v : g.values)
    if (v.data) n += v.data->size();
  return n;
}

// Bytes of the model's initializers (what the model file holds).
uint64_t initializer_bytes(const Graph& g) {
  uint64_t n = 0;
  for (const Value& v : g.values)
    if (v.initializer && v.data) n += uint64_t(v.desc.bytes());
  return n;
}

std::vector<uint8_t> weights_of(const Compilation& c, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("of_model_copies_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string plan = (dir / (tag + ".ofp")).string();
  const std::string weights = write_plan(c, plan);
  std::vector<uint8_t> bytes = of::read_file(weights);
  std::filesystem::remove_all(dir);
  return bytes;
}

}  // namespace

TEST_CASE("parallelize keeps one copy of the model: boxes and optimizer state hold no bytes", "[compiler]") {
  const Compilation one = compile_mlp(1, 1);
  for (const Value& v : one.graph.values)
    if (v.optimizer_state) {
      INFO(v.name);
      REQUIRE(v.data.has_value());  // still a stored tensor
      CHECK(v.data->empty());
      CHECK(v.contents() == nullptr);
    }
  const uint64_t model = initializer_bytes(one.graph);
  REQUIRE(model > 3'000'000);  // mlp.onnx: 784x1024 + 1024x1024 + 1024x10 floats
  CHECK(held_bytes(one.graph) < model + 64 * 1024);

  for (const auto& [dp, tp] : {std::pair{4, 1}, std::pair{2, 2}}) {
    INFO("dp " << dp << " tp " << tp);
    const Compilation c = compile_mlp(dp, tp);
    int boxes = 0;
    for (const Value& v : c.graph.values)
      if (v.logical >= 0 && v.data) {
        INFO(v.name);
        CHECK(v.data->empty());
        ++boxes;
      }
    CHECK(boxes >= 4 * 6);  // every weight, bias and Adam moment on every device
    // The physical graph holds no model bytes; the logical one holds the model once.
    CHECK(held_bytes(c.graph) < 64 * 1024);
    CHECK(held_bytes(c.logical) < model + 64 * 1024);
    // Each device still loads its box of the whole tensor, so the weights file is one device's.
    CHECK(weights_of(c, "parallel") == weights_of(one, "one"));
  }
}
