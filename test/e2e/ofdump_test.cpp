// SPDX-License-Identifier: Apache-2.0
// ofdump: the summary and task list for people, JSON that parses with stable fields, DOT that
// Graphviz renders.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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
