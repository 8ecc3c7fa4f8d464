// SPDX-License-Identifier: Apache-2.0
// Plans for GPUs (ofc --devices N:cuda), run on this CPU by ofrun --emulate-gpus: each GPU a
// device whose kernels (the CPU twins) and copies complete late on a thread of its own, as on a
// stream; sources, sink and snapshots on each rank's host, h2d and d2h transfers between. They
// must train exactly as the same split on CPU devices does: the same losses and checkpoints, bit
// for bit (what a GPU run itself gives is checked on a GPU: benchmarks/gpu/check.sh).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_util.h"

using namespace of::e2e;

namespace {

const std::string kFashion = "idx:/usr/share/datasets/fashion-mnist";

std::vector<double> read_losses(const std::string& metrics) {
  std::vector<double> out;
  std::istringstream lines(slurp(metrics));
  for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  return out;
}

std::string latest(const std::string& dir) {
  std::string n = slurp(dir + "/latest");
  while (!n.empty() && n.back() == '\n') n.pop_back();
  return dir + "/" + n;
}

// Trains `model` compiled with `flags` on CPU devices and on GPUs (emulated) and compares.
// `gpu_run`: more flags for the GPU plan's run (--launch-local: one process per rank).
void check_same(const std::string& model, const std::string& flags, const std::string& data, const std::string& gpu_devices,
                const std::string& gpu_run = "") {
  TempDir d;
  std::string cpu_devices = gpu_devices;
  cpu_devices.replace(cpu_devices.find(":cuda"), 5, ":cpu");
  for (const auto& [name, devices] : {std::pair<std::string, std::string>{"cpu", cpu_devices}, {"gpu", gpu_devices}}) {
    const std::string plan = d / (name + ".ofp");
    CmdResult c = run_cmd(bin("ofc") + " " + fixture(model) + " -o " + plan + " --train --loss cross_entropy " + flags + " --devices " + devices, d);
    INFO(c.err);
    REQUIRE(c.exit_code == 0);
    CmdResult r = run_cmd(bin("ofrun") + " " + plan + " --data " + data + " --steps 4 --no-shuffle --log-every 1 --metrics " + (d / (name + ".jsonl")) +
                              " --checkpoint " + (d / ("ck_" + name)) + (name == "gpu" ? " --emulate-gpus " + gpu_run : ""),
                          d);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::vector<double> cpu = read_losses(d / "cpu.jsonl"), gpu = read_losses(d / "gpu.jsonl");
  REQUIRE(cpu.size() == 4);
  CHECK(cpu == gpu);
  for (const char* file : {"/model.safetensors", "/optimizer.safetensors"}) {
    INFO(file);
    CHECK(slurp(latest(d / "ck_cpu") + file) == slurp(latest(d / "ck_gpu") + file));
  }
}

}  // namespace

TEST_CASE("gpu plans: the MLP on 1 and 2 GPUs and on 2 ranks of 2 trains as on CPU devices, bit for bit", "[e2e][parallel]") {
  for (const char* devices : {"1:cuda", "2:cuda", "2x2:cuda"}) {
    INFO(devices);
    check_same("mlp.onnx", "--optimizer adamw", kFashion, devices);
  }
}

TEST_CASE("gpu plans: the language model tensor-parallel over 2 GPUs trains as on CPU devices, bit for bit", "[e2e][parallel]") {
  check_same("lm.onnx", "--optimizer adamw --tp 2", "tokens:" + fixture("lm_corpus.u16"), "2:cuda");
}

TEST_CASE("gpu plans: 2 ranks of 2 GPUs in one process per rank train as on CPU devices, bit for bit", "[e2e][parallel]") {
  check_same("mlp.onnx", "--optimizer adamw", kFashion, "2x2:cuda", "--launch-local");
}

TEST_CASE("gpu plans: without --emulate-gpus ofrun trains on this machine's GPU close to the CPU run, or refuses in one line without one", "[e2e]") {
  // Where a CUDA device exists (benchmarks/gpu/check.sh carries this binary there) the plan runs
  // on it: the CUDA kernels round otherwise than the CPU's, so the losses agree within a
  // tolerance. Here, without one, the refusal is checked: one line, no metrics written.
  TempDir d;
  std::vector<double> losses[2];
  for (int gpu = 0; gpu < 2; ++gpu) {
    const std::string plan = d / (gpu ? "gpu.ofp" : "cpu.ofp"), metrics = d / (gpu ? "gpu.jsonl" : "cpu.jsonl");
    CmdResult c = run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + plan + " --train --loss cross_entropy --optimizer adamw --devices " +
                              (gpu ? "1:cuda" : "1:cpu"),
                          d);
    INFO(c.err);
    REQUIRE(c.exit_code == 0);
    CmdResult r = run_cmd(bin("ofrun") + " " + plan + " --data " + kFashion + " --steps 6 --no-shuffle --log-every 1 --metrics " + metrics, d);
    INFO(r.err);
    if (gpu && r.exit_code != 0) {
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK((r.err.find("CUDA device") != std::string::npos || r.err.find("built without CUDA") != std::string::npos));
      CHECK_FALSE(std::filesystem::exists(metrics));
      return;
    }
    REQUIRE(r.exit_code == 0);
    losses[gpu] = read_losses(metrics);
  }
  REQUIRE(losses[0].size() == 6);
  REQUIRE(losses[1].size() == 6);
  for (size_t s = 0; s < 6; ++s) {
    INFO("step " << s << ": cpu " << losses[0][s] << ", gpu " << losses[1][s]);
    CHECK(std::abs(losses[1][s] - losses[0][s]) <= 1e-4 * std::abs(losses[0][s]) + 1e-5);
  }
}
