// SPDX-License-Identifier: Apache-2.0
// Autodiff end to end: `ofc --loss cross_entropy --gradients` on the PyTorch-exported MLP and
// CNN, run by ofrun, gives PyTorch's loss and every weight's gradient (make_fixtures.py,
// gradient_fixtures) within 1e-4 relative.
#include <catch2/catch.hpp>
#include <filesystem>

#include "e2e/e2e_util.h"

using namespace of::e2e;

namespace {

void check_gradients(const std::string& model, const std::vector<std::string>& weights) {
  TempDir d;
  CmdResult c = run_cmd(bin("ofc") + " " + fixture(model + ".onnx") + " -o " + (d / "g.ofp") + " --loss cross_entropy --gradients", d);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  std::string cmd = bin("ofrun") + " " + (d / "g.ofp") + " --input input=" + fixture(model + "_input.npy") +
                    " --input label=" + fixture(model + "_labels.npy") + " --output loss=" + (d / "loss.npy");
  for (const std::string& w : weights) cmd += " --output " + w + ".grad=" + (d / (w + ".npy"));
  CmdResult r = run_cmd(cmd, d);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(relative_error(of::read_npy(d / "loss.npy"), of::read_npy(fixture(model + "_loss.npy"))) < 1e-5);
  for (const std::string& w : weights) {
    INFO("weight " << w);
    of::NpyArray got = of::read_npy(d / (w + ".npy"));
    std::string full = fixture(model + "_grad." + w + ".npy"), every16 = fixture(model + "_grad." + w + ".every16.npy");
    if (std::filesystem::exists(full)) {
      of::NpyArray want = of::read_npy(full);
      REQUIRE(got.shape == want.shape);
      CHECK(relative_error(got, want) < 1e-4);
    } else {
      of::NpyArray want = of::read_npy(every16);
      const auto* g = reinterpret_cast<const float*>(got.data.data());
      std::vector<float> sampled;
      for (size_t i = 0; i < got.data.size() / 4; i += 16) sampled.push_back(g[i]);
      REQUIRE(sampled.size() == want.data.size() / 4);
      of::NpyArray s{of::DType::f32, {int64_t(sampled.size())}, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(sampled.data()), reinterpret_cast<uint8_t*>(sampled.data() + sampled.size()))};
      CHECK(relative_error(s, want) < 1e-4);
    }
  }
}

}  // namespace

TEST_CASE("gradients: the MLP's loss and weight gradients match PyTorch", "[e2e]") {
  check_gradients("mlp", {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"});
}

TEST_CASE("gradients: the CNN's loss and weight gradients match PyTorch", "[e2e]") {
  check_gradients("cnn", {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
}

TEST_CASE("gradients: an operator without a gradient rule is refused by name", "[e2e]") {
  TempDir d;
  CmdResult r = run_cmd(bin("ofc") + " " + fixture("no_grad_rule.onnx") + " -o " + (d / "g.ofp") + " --loss mse --gradients", d);
  CHECK(r.exit_code == 1);
  CHECK(r.err == "ofc: error: " + fixture("no_grad_rule.onnx") + ": node 'delay' (Delay): no gradient rule for Delay yet: this model cannot be trained\n");
  CHECK_FALSE(std::filesystem::exists(d / "g.ofp"));
  r = run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "g.ofp") + " --gradients", d);
  CHECK(r.exit_code == 2);  // a usage error
  CHECK(r.err == "ofc: error: --gradients requires --loss (see ofc --help)\n");
}
