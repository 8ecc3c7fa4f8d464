// SPDX-License-Identifier: Apache-2.0
// The PyTorch-exported models and every operator case: ofc + ofrun outputs against the
// outputs PyTorch (or the ONNX reference semantics) produced, within 1e-4 relative.
#include <catch2/catch.hpp>
#include <fstream>

#include "e2e/e2e_util.h"

using namespace of::e2e;

namespace {

// Compiles `model`, runs it on the given inputs, and returns the relative error of output `y_name`.
double compile_run_compare(const TempDir& dir, const std::string& model, const std::vector<std::pair<std::string, std::string>>& inputs,
                           const std::string& y_name, const std::string& expected, const std::string& extra = "") {
  CmdResult c = run_cmd(bin("ofc") + " " + model + " -o " + (dir / "p.ofp"), dir);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  std::string cmd = bin("ofrun") + " " + (dir / "p.ofp") + " --output " + y_name + "=" + (dir / "y.npy") + " " + extra;
  for (const auto& [name, file] : inputs) cmd += " --input " + name + "=" + file;
  CmdResult r = run_cmd(cmd, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  of::NpyArray got = of::read_npy(dir / "y.npy"), want = of::read_npy(expected);
  REQUIRE(got.shape == want.shape);
  return relative_error(got, want);
}

}  // namespace

TEST_CASE("models: the 784-1024-1024-10 MLP matches PyTorch within 1e-4", "[e2e]") {
  TempDir dir;
  for (const char* threads : {"1", "2", "4"}) {
    double err = compile_run_compare(dir, fixture("mlp.onnx"), {{"input", fixture("mlp_input.npy")}}, "logits",
                                     fixture("mlp_output.npy"), std::string("--threads ") + threads);
    INFO("threads " << threads);
    CHECK(err < 1e-4);
  }
}

TEST_CASE("models: the small CNN matches PyTorch within 1e-4", "[e2e]") {
  TempDir dir;
  double err = compile_run_compare(dir, fixture("cnn.onnx"), {{"input", fixture("cnn_input.npy")}}, "logits", fixture("cnn_output.npy"));
  CHECK(err < 1e-4);
}

TEST_CASE("models: every operator case matches its reference output", "[e2e]") {
  std::ifstream cases(fixture("ops/cases.txt"));
  std::string name;
  int n_inputs = 0, count = 0;
  while (cases >> name >> n_inputs) {
    TempDir dir;
    std::vector<std::pair<std::string, std::string>> inputs;
    for (int i = 0; i < n_inputs; ++i)
      inputs.emplace_back("x" + std::to_string(i), fixture("ops/" + name + ".x" + std::to_string(i) + ".npy"));
    INFO("case " << name);
    CHECK(compile_run_compare(dir, fixture("ops/" + name + ".onnx"), inputs, "y", fixture("ops/" + name + ".y.npy")) < 1e-4);
    ++count;
  }
  CHECK(count >= 40);
}

TEST_CASE("models: several pieces stream in order and concatenate", "[e2e]") {
  // Three copies of the input, each scaled differently, must come back as three distinct pieces.
  TempDir dir;
  of::NpyArray x = of::read_npy(fixture("mlp_input.npy"));
  std::vector<float> three(x.data.size() / 4 * 3);
  const auto* src = reinterpret_cast<const float*>(x.data.data());
  for (size_t k = 0; k < 3; ++k)
    for (size_t i = 0; i < x.data.size() / 4; ++i) three[k * x.data.size() / 4 + i] = src[i] * float(k + 1);
  of::write_npy(dir / "x3.npy", of::DType::f32, {192, 784}, three.data());
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (dir / "p.ofp"), dir).exit_code == 0);
  CmdResult r = run_cmd(bin("ofrun") + " " + (dir / "p.ofp") + " --input input=" + (dir / "x3.npy") + " --output logits=" + (dir / "y.npy"), dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("ofrun: 3 pieces") == 0);
  of::NpyArray y = of::read_npy(dir / "y.npy");
  REQUIRE(y.shape == of::Shape{192, 10});
  // Piece 0 equals PyTorch's output for the unscaled input.
  of::NpyArray want = of::read_npy(fixture("mlp_output.npy"));
  of::NpyArray first{of::DType::f32, {64, 10}, std::vector<uint8_t>(y.data.begin(), y.data.begin() + 64 * 10 * 4)};
  CHECK(relative_error(first, want) < 1e-4);
  // Pieces 1 and 2 differ from piece 0 (they saw scaled inputs).
  CHECK(std::vector<uint8_t>(y.data.begin() + 2560, y.data.begin() + 5120) != first.data);
}
