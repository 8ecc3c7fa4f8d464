// SPDX-License-Identifier: Apache-2.0
// ofdump: the summary and task list for people, JSON that parses with stable fields, DOT that
// Graphviz renders.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/safetensors.h"
#include "e2e/e2e_util.h"
#include "schemas/plan_format.h"

using namespace of::e2e;

TEST_CASE("ofdump: summary, JSON and DOT for the MLP and CNN plans", "[e2e]") {
  for (const char* model : {"mlp", "cnn"}) {
    TempDir dir;
    std::string plan = dir / (std::string(model) + ".ofp");
    REQUIRE(run_cmd(bin("ofc") + " " + fixture(std::string(model) + ".onnx") + " -o " + plan, dir).exit_code == 0);

    CmdResult text = run_cmd(bin("ofdump") + " " + plan, dir);
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("tasks ") != std::string::npos);
    CHECK(text.out.find("arena 0") != std::string::npos);
    CHECK(text.out.find("Gemm") != std::string::npos);

    CmdResult js = run_cmd(bin("ofdump") + " --json " + plan, dir);
    REQUIRE(js.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(js.out);
    CHECK(j["version"] == of::plan_format::kVersion);
    CHECK(j["tasks"].size() == j["tasks"].back()["id"].get<size_t>() + 1);
    CHECK(j["tasks"][0]["kind"] == "source");
    CHECK(j["tasks"].back()["kind"] == "sink");
    for (const auto& r : j["regsts"]) CHECK(r["offsets"].size() == r["slots"].get<size_t>());
    CHECK(j["arenas"][0]["bytes"].get<uint64_t>() > 0);
    // Text and JSON agree on the task count.
    CHECK(text.out.find("tasks    " + std::to_string(j["tasks"].size())) != std::string::npos);

    CmdResult dot = run_cmd(bin("ofdump") + " --dot " + plan, dir);
    REQUIRE(dot.exit_code == 0);
    CHECK(dot.out.rfind("digraph plan {", 0) == 0);
    // setup installs graphviz: without `dot` the rendering has not been checked, so it fails.
    INFO("graphviz 'dot' must be installed to check the DOT output renders");
    REQUIRE(std::system("command -v dot >/dev/null 2>&1") == 0);
    std::ofstream(dir / "p.dot") << dot.out;
    CHECK(run_cmd("dot -Tsvg " + (dir / "p.dot") + " -o " + (dir / "p.svg"), dir).exit_code == 0);
    CHECK(std::filesystem::file_size(dir / "p.svg") > 0);
  }
}

TEST_CASE("ofdump: model tensors a plan does not read are listed (text and JSON)", "[e2e]") {
  TempDir dir;
  const std::string plan = dir / "bn.ofp";
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("export/bn_mlp_train.onnx") + " -o " + plan + " --train --loss cross_entropy", dir).exit_code == 0);
  // The evaluation plan reads the running statistics but not num_batches_tracked; checkpoints
  // still carry it. (ofdump lists both kinds: they are in checkpoints though no task reads them.)
  CmdResult text = run_cmd(bin("ofdump") + " " + (dir / "bn.eval.ofp"), dir);
  REQUIRE(text.exit_code == 0);
  INFO(text.out);
  CHECK(text.out.find("carried  1 model tensors this plan does not read: bn.num_batches_tracked\n") != std::string::npos);
  CmdResult js = run_cmd(bin("ofdump") + " --json " + (dir / "bn.eval.ofp"), dir);
  REQUIRE(js.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(js.out);
  CHECK(j["carried"] == nlohmann::json::array({"bn.num_batches_tracked"}));
  // The fixture's registered buffer 'keep' (a mask the Where reads) is folded into the plan.
  CHECK(text.out.find("buffers  1 folded into the plan's constants: keep\n") != std::string::npos);
  CHECK(j["buffers"] == nlohmann::json::array({"keep"}));
}

TEST_CASE("ofdump: --memory says what each arena holds by kind and its largest items", "[e2e]") {
  // The MLP trained with SGD and momentum: the weights are the weights file's tensors, each with
  // a momentum buffer of its size; tensor parallelism halves the weights of the split layers.
  TempDir dir;
  const std::string one = dir / "one.ofp", tp = dir / "tp.ofp";
  const std::string train = " --train --loss cross_entropy --optimizer sgd:lr=0.1,momentum=0.9";
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + one + train, dir).exit_code == 0);
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + tp + train + " --devices 2:cpu --tp 2", dir).exit_code == 0);
  const of::SafetensorsFile weights = of::read_safetensors(dir / "one.safetensors");
  uint64_t weight_bytes = 0;
  for (const auto& [name, e] : weights.entries) weight_bytes += e.bytes;
  REQUIRE(weight_bytes > 1000000);

  auto kinds = [&](const std::string& plan) {
    CmdResult js = run_cmd(bin("ofdump") + " --json " + plan, dir);
    REQUIRE(js.exit_code == 0);
    return nlohmann::json::parse(js.out)["arenas"];
  };
  const nlohmann::json a = kinds(one);
  REQUIRE(a.size() == 1);
  const nlohmann::json& k = a[0]["kinds"];
  CHECK(k["weights"].get<uint64_t>() == weight_bytes);
  // Every trained tensor has a momentum buffer; the loss's constant 1 (in the weights file) none.
  REQUIRE(weights.entries.count("loss/one"));
  CHECK(k["optimizer state"].get<uint64_t>() == weight_bytes - weights.entries.at("loss/one").bytes);
  // The source's 2 slots: 64 samples and labels, and the step's scalars (lr, step), aligned.
  const uint64_t samples = uint64_t(64) * (784 * 4 + 8) * 2;
  CHECK(k["data"].get<uint64_t>() >= samples);
  CHECK(k["data"].get<uint64_t>() <= samples + 2 * 256);
  CHECK(k["boxing"].get<uint64_t>() == 0);
  CHECK(k["activations"].get<uint64_t>() > 0);
  uint64_t sum = 0;
  for (const auto& [name, bytes] : k.items()) sum += bytes.get<uint64_t>();
  CHECK(sum <= a[0]["peak"].get<uint64_t>());  // one device, nothing shared across kinds here
  CHECK(sum + 64 * 64 >= a[0]["peak"].get<uint64_t>());  // what alignment pads at most

  for (const nlohmann::json& arena : kinds(tp)) {
    CHECK(arena["kinds"]["weights"].get<uint64_t>() < weight_bytes * 3 / 4);
    CHECK(arena["kinds"]["optimizer state"].get<uint64_t>() + 4 == arena["kinds"]["weights"].get<uint64_t>());
    CHECK(arena["kinds"]["boxing"].get<uint64_t>() > 0);
  }
  CmdResult text = run_cmd(bin("ofdump") + " --memory " + one, dir);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("optimizer state") != std::string::npos);
  CHECK(text.out.find("largest on rank0/cpu:0: ") != std::string::npos);
  CHECK(text.out.find("'fc2.weight' 4.0 MiB (weights)") != std::string::npos);
}
