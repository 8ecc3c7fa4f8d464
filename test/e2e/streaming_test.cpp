// SPDX-License-Identifier: Apache-2.0
// Streaming is real: a 4-stage chain of test "delay" ops (20 ms each) streams 20 pieces in about
// (20 + 3) stage times with 2 slots (stages overlap) and clearly slower with 1 slot (a stage must
// wait for its consumer to finish before reusing the only slot). Registers that share bytes (the
// default) bound the pieces in their share group to its slot count instead: the 4 stages overlap
// with 4 slots.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e/e2e_util.h"

using namespace of::e2e;

namespace {

double streamed_seconds(const TempDir& dir, const std::string& slots, const std::string& trace = "", const std::string& plan = "chain.ofp") {
  std::string cmd = bin("ofrun") + " " + (dir / plan) + " --input x=" + (dir / "x.npy") +
                    " --pieces 20 --threads 4 --slots " + slots + (trace.empty() ? "" : " --trace " + trace);
  CmdResult r = run_cmd(cmd, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // "ofrun: 20 pieces, 0.470 s, 42.6 pieces/s"
  REQUIRE(r.out.find("ofrun: 20 pieces, ") == 0);
  return std::stod(r.out.substr(std::string("ofrun: 20 pieces, ").size()));
}

}  // namespace

TEST_CASE("streaming: 4 delay stages overlap with 2 slots and not with 1", "[e2e][slow]") {
  TempDir dir;
  std::vector<float> x(16, 1.0f);
  of::write_npy(dir / "x.npy", of::DType::f32, {1, 16}, x.data());
  CmdResult c = run_cmd(bin("ofc") + " " + fixture("delay_chain.onnx") + " -o " + (dir / "chain.ofp") + " --slots 2 --no-memory-sharing", dir);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  c = run_cmd(bin("ofc") + " " + fixture("delay_chain.onnx") + " -o " + (dir / "shared.ofp") + " --slots 4", dir);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);

  const double stage = 0.020, ideal = (20 + 3) * stage, serial = 20 * 4 * stage;
  double two = streamed_seconds(dir, "2", dir / "trace.json");
  double one = streamed_seconds(dir, "1");
  double shared_two = streamed_seconds(dir, "2", "", "shared.ofp"), shared_four = streamed_seconds(dir, "4", "", "shared.ofp");
  INFO("2 slots: " << two << " s, 1 slot: " << one << " s, ideal " << ideal << " s, serial " << serial << " s; sharing bytes: "
                   << shared_two << " s with 2 slots, " << shared_four << " s with 4");
  CHECK(two >= ideal * 0.95);
  CHECK(two < ideal * 1.3);
  CHECK(one > two * 1.4);
  CHECK(shared_four < ideal * 1.3);
  CHECK(shared_two > shared_four * 1.4);

  // The trace shows it: one row per task, 20 acts on each delay row, and stages acting at once.
  nlohmann::json trace = nlohmann::json::parse(slurp(dir / "trace.json"));
  std::map<int, std::vector<std::pair<double, double>>> acts;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X") acts[e["tid"].get<int>()].emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  REQUIRE(acts.size() == 6);  // source, 4 delays, sink
  int named = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      const std::string row = e["args"]["name"].get<std::string>();
      CHECK(row.rfind("cpu:0 · " + std::to_string(e["tid"].get<int>()) + " ", 0) == 0);  // its device, then the task
      ++named;
    }
  CHECK(named == 6);
  int overlaps = 0;
  for (int a = 1; a <= 4; ++a) {
    CHECK(acts[a].size() == 20);
    for (int b = a + 1; b <= 4; ++b)
      for (const auto& x1 : acts[a])
        for (const auto& x2 : acts[b]) overlaps += x1.first < x2.second && x2.first < x1.second;
  }
  CHECK(overlaps >= 20);
}
