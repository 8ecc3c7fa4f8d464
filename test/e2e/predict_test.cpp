// SPDX-License-Identifier: Apache-2.0
// Predicted step time and the search that uses it, as a user drives them: ofrun --calibrate writes
// a costs file that ofc --costs reads (with a plan, also that plan's kernels); every plan carries its predicted step time (ofdump shows
// it, a training run prints it beside the measured one); ofc --auto weighs every split of the
// devices, keeps the fastest predicted, holds the degrees given, turns to the memory options
// (--share-order tight, --recompute, --zero 1, --zero 3) only when nothing fits, and is deterministic.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <thread>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "test/e2e/e2e_util.h"

using namespace of::e2e;
using nlohmann::json;

namespace {

const std::string kFashion = "idx:/usr/share/datasets/fashion-mnist";
const std::string kSgd = " --train --loss cross_entropy --optimizer sgd:lr=0.01,momentum=0.9";

CmdResult ofc_mlp(const TempDir& d, const std::string& out, const std::string& flags) {
  return run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / out) + kSgd + " " + flags, d);
}

json dump_json(const TempDir& d, const std::string& plan) {
  CmdResult r = run_cmd(bin("ofdump") + " --json " + plan, d);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("predict: ofrun --calibrate writes the costs ofc --costs reads and a run prints predicted and measured step time", "[e2e]") {
  TempDir d;
  CmdResult cal = run_cmd(bin("ofrun") + " --calibrate " + (d / "costs.json"), d);
  INFO(cal.out << cal.err);
  REQUIRE(cal.exit_code == 0);
  CHECK(cal.out.find("ofrun: calibrated: matrix ") != std::string::npos);
  const json costs = json::parse(slurp(d / "costs.json"));
  CHECK(costs.at("format") == "of-costs");
  CHECK(costs.at("matrix_flops_per_s").get<double>() > 1e6);
  CHECK(costs.at("task_overhead_s").get<double>() > 0);
  // Every rate also beside every other core busy (a rank's devices share memory and caches): never
  // faster than alone.
  const unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, 64u);
  if (cores > 1) {
    CHECK(costs.at("shared_cores").get<int64_t>() == int64_t(cores));
    CHECK(costs.at("shared_memory_bytes_per_s").get<double>() <= costs.at("memory_bytes_per_s").get<double>());
    CHECK(costs.at("shared_copy_bytes_per_s").get<double>() <= costs.at("copy_bytes_per_s").get<double>());
  } else {
    CHECK_FALSE(costs.contains("shared_cores"));
  }

  CmdResult c = ofc_mlp(d, "p.ofp", "--costs " + (d / "costs.json"));
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);
  const std::regex predicted_line(R"(ofc: predicted step time ([0-9.]+) ms \(costs: (.+)\))");
  std::smatch m;
  REQUIRE(std::regex_search(c.out, m, predicted_line));
  CHECK(m[2] == d / "costs.json");
  const json j = dump_json(d, d / "p.ofp");
  CHECK(j.at("prediction").at("step_seconds").get<double>() == Approx(std::stod(m[1]) / 1e3).epsilon(1e-3));
  CHECK(run_cmd(bin("ofdump") + " " + (d / "p.ofp"), d).out.find("predicted step time ") != std::string::npos);

  CmdResult r = run_cmd(bin("ofrun") + " " + (d / "p.ofp") + " --data " + kFashion + " --steps 6 --threads 1 --kernel-threads 1", d);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(std::regex_search(r.out, m, std::regex(R"(ofrun: step time predicted ([0-9.]+) ms, measured ([0-9.]+) ms)")));
  CHECK(std::stod(m[1]) > 0);
  CHECK(std::stod(m[2]) > 0);

  // Without --costs: the built-in figures, named.
  CmdResult plain = ofc_mlp(d, "q.ofp", "");
  CHECK(plain.out.find("(costs: built-in)") != std::string::npos);
  // With a plan, --calibrate also measures that plan's kernels on their shapes; ofc then costs
  // those kernels by name. Writing the costs over the plan is refused, and nothing is written.
  CmdResult with_plan = run_cmd(bin("ofrun") + " " + (d / "p.ofp") + " --calibrate " + (d / "c2.json"), d);
  INFO(with_plan.out << with_plan.err);
  REQUIRE(with_plan.exit_code == 0);
  CHECK(with_plan.out.find("kernels of " + (d / "p.ofp") + " on their shapes") != std::string::npos);
  const json measured = json::parse(slurp(d / "c2.json"));
  REQUIRE(measured.at("kernels").contains("gemm"));
  CHECK(measured.at("kernels").at("gemm").at("rate").get<double>() > 1e6);
  CHECK(ofc_mlp(d, "k.ofp", "--costs " + (d / "c2.json")).exit_code == 0);
  // Each distinct shape once, by its key; --merge adds another plan's shapes (a dp 2 plan's half
  // batches) to those the file has, and ofc costs both plans' kernels as measured.
  REQUIRE(measured.contains("shapes"));
  const json& one = measured.at("shapes");
  CHECK(one.size() >= 8);  // the MLP's products, gradients and updates on one device
  CHECK(one.contains("gemm alpha=1 beta=1 trans_a=1 trans_b=0 : f32[64,1024] f32[64,1024] -> f32[1024,1024]"));
  REQUIRE(ofc_mlp(d, "dp.ofp", "--devices 2:cpu --dp 2").exit_code == 0);
  CmdResult merged = run_cmd(bin("ofrun") + " " + (d / "dp.ofp") + " --calibrate " + (d / "c2.json") + " --merge", d);
  INFO(merged.out << merged.err);
  REQUIRE(merged.exit_code == 0);
  const json both = json::parse(slurp(d / "c2.json")).at("shapes");
  for (const auto& item : one.items()) CHECK(both.contains(item.key()));
  CHECK(both.contains("gemm alpha=1 beta=1 trans_a=1 trans_b=0 : f32[32,1024] f32[32,1024] -> f32[1024,1024]"));
  CHECK(merged.out.find(fmt::format("{} in the file", both.size())) != std::string::npos);
  if (cores > 1) {  // and each shape beside the other cores, merged alike
    const json shared = json::parse(slurp(d / "c2.json")).at("shared_shapes");
    CHECK(shared.size() == both.size());
    CHECK(shared.contains("gemm alpha=1 beta=1 trans_a=1 trans_b=0 : f32[64,1024] f32[64,1024] -> f32[1024,1024]"));
    CHECK(shared.contains("gemm alpha=1 beta=1 trans_a=1 trans_b=0 : f32[32,1024] f32[32,1024] -> f32[1024,1024]"));
  }
  // Merging into a file that is not a costs file is refused, and the file is left as it was.
  std::ofstream(d / "notes.json") << "{\"mine\": 1}\n";
  CmdResult not_costs = run_cmd(bin("ofrun") + " " + (d / "dp.ofp") + " --calibrate " + (d / "notes.json") + " --merge", d);
  CHECK(not_costs.exit_code != 0);
  CHECK(not_costs.err.find(d / "notes.json") != std::string::npos);
  CHECK(slurp(d / "notes.json") == "{\"mine\": 1}\n");
  CHECK(run_cmd(bin("ofrun") + " --calibrate " + (d / "c4.json") + " --merge", d).err.find("--merge adds a plan's") != std::string::npos);
  const std::string plan_bytes = slurp(d / "p.ofp");
  CmdResult over = run_cmd(bin("ofrun") + " " + (d / "p.ofp") + " --calibrate " + (d / "p.ofp"), d);
  CHECK(over.exit_code != 0);
  CHECK(over.err.find("--calibrate") != std::string::npos);
  CHECK(slurp(d / "p.ofp") == plan_bytes);
  // --calibrate runs nothing else: a run's options with it are refused.
  CmdResult mixed = run_cmd(bin("ofrun") + " " + (d / "p.ofp") + " --calibrate " + (d / "c3.json") + " --data " + kFashion, d);
  CHECK(mixed.exit_code != 0);
  CHECK(mixed.err.find("--calibrate measures and exits") != std::string::npos);
  CHECK(!std::filesystem::exists(d / "c3.json"));
  // A costs file that is not one: one line, naming the file and the field.
  {
    std::string text = slurp(d / "costs.json");
    text.replace(text.find("\"copy_bytes_per_s\": "), 20, "\"copy_bytes_per_s\": -");
    std::ofstream(d / "bad.json") << text;
  }
  CmdResult bad = ofc_mlp(d, "b.ofp", "--costs " + (d / "bad.json"));
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("copy_bytes_per_s") != std::string::npos);
  CHECK(bad.err.find(d / "bad.json") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  CHECK(!std::filesystem::exists(d / "b.ofp"));
}

TEST_CASE("auto: ofc --auto weighs every split of the devices and keeps the least predicted step time", "[e2e][parallel]") {
  TempDir d;
  CmdResult c = ofc_mlp(d, "a.ofp", "--devices 4:cpu --auto --auto-compile 6");
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(c.out.find("ofc: --auto weighed 6 strategies and chose --dp ") != std::string::npos);
  const json j = dump_json(d, d / "a.ofp");
  const json& k = j.at("prediction").at("candidates");
  REQUIRE(k.size() == 6);  // dp x tp x pp = 4: (4,1,1) (2,2,1) (2,1,2) (1,4,1) (1,2,2) (1,1,4)
  std::set<std::string> flags;
  double last = 0;
  bool refused_seen = false;
  for (const json& x : k) {
    flags.insert(x.at("flags").get<std::string>());
    if (!x.at("refused").get<std::string>().empty()) {
      refused_seen = true;
      continue;
    }
    CHECK_FALSE(refused_seen);  // weighed ones first, by predicted time
    CHECK(x.at("step_seconds").get<double>() >= last);
    last = x.at("step_seconds").get<double>();
    CHECK(x.at("peak_bytes").get<uint64_t>() > 0);
  }
  CHECK(flags.size() == 6);
  const std::string chosen = k[0].at("flags");
  CHECK(j.at("prediction").at("step_seconds") == k[0].at("step_seconds"));
  // The plan is the one compiled with those flags.
  CmdResult same = ofc_mlp(d, "b.ofp", "--devices 4:cpu " + chosen);
  REQUIRE(same.exit_code == 0);
  CHECK(dump_json(d, d / "b.ofp").at("tasks") == j.at("tasks"));
  // Deterministic: the same search makes the same plan and weighs the same candidates.
  REQUIRE(ofc_mlp(d, "c.ofp", "--devices 4:cpu --auto --auto-compile 6").exit_code == 0);
  const json again = dump_json(d, d / "c.ofp");
  CHECK(again.at("tasks") == j.at("tasks"));
  CHECK(again.at("prediction") == j.at("prediction"));
  CHECK(run_cmd(bin("ofdump") + " " + (d / "a.ofp"), d).out.find("strategies weighed") != std::string::npos);
  // By default the splits are ranked by estimate and the best few compiled: the same choice here.
  CmdResult ranked = ofc_mlp(d, "r.ofp", "--devices 4:cpu --auto");
  INFO(ranked.out);
  REQUIRE(ranked.exit_code == 0);
  CHECK(ranked.out.find("(the best of 6 by estimate) and chose " + chosen + " ") != std::string::npos);
  CHECK(dump_json(d, d / "r.ofp").at("tasks") == j.at("tasks"));
  // Degrees given are held.
  CmdResult tp = ofc_mlp(d, "t.ofp", "--devices 4:cpu --auto --tp 2");
  REQUIRE(tp.exit_code == 0);
  const json kt = dump_json(d, d / "t.ofp").at("prediction").at("candidates");
  CHECK(kt.size() == 2);
  for (const json& x : kt) CHECK(x.at("flags").get<std::string>().find("--tp 2") != std::string::npos);
  // A plan trained from the chosen strategy runs.
  CmdResult r = run_cmd(bin("ofrun") + " " + (d / "a.ofp") + " --data " + kFashion + " --steps 3", d);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("auto: when no split fits --device-memory the memory options are weighed, and none fitting is one line", "[e2e][parallel]") {
  TempDir d;
  // Data parallel held (so that --zero 3 can help): the plain plan's largest device, then a limit
  // just below it.
  REQUIRE(ofc_mlp(d, "a.ofp", "--devices 2:cpu --auto --dp 2").exit_code == 0);
  uint64_t smallest = ~uint64_t(0);
  const json plain = dump_json(d, d / "a.ofp");  // outlives the loop
  for (const json& x : plain.at("prediction").at("candidates"))
    if (x.at("refused").get<std::string>().empty()) smallest = std::min(smallest, x.at("peak_bytes").get<uint64_t>());
  CmdResult c = ofc_mlp(d, "m.ofp", fmt::format("--devices 2:cpu --auto --dp 2 --device-memory {}", smallest - 1));
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);
  const json k = dump_json(d, d / "m.ofp").at("prediction").at("candidates");
  const std::string chosen = k[0].at("flags");
  CHECK((chosen.find("--share-order tight") != std::string::npos || chosen.find("--recompute") != std::string::npos ||
         chosen.find("--zero 1") != std::string::npos || chosen.find("--zero 3") != std::string::npos));
  CHECK(k[0].at("peak_bytes").get<uint64_t>() < smallest);
  // Nothing fits at all: refused naming --auto, one line, nothing written.
  CmdResult none = ofc_mlp(d, "n.ofp", "--devices 2:cpu --auto --device-memory 1000");
  CHECK(none.exit_code != 0);
  CHECK(none.err.find("--auto") != std::string::npos);
  CHECK(std::count(none.err.begin(), none.err.end(), '\n') == 1);
  CHECK(!std::filesystem::exists(d / "n.ofp"));
}
