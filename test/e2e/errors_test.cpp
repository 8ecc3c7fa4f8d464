// SPDX-License-Identifier: Apache-2.0
// Bad input gets one line naming the file and the cause, a non-zero exit status, no crash, and
// no half-written output.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "e2e/e2e_util.h"

using namespace of::e2e;

namespace {

// Expects a clean failure: exit status 1, exactly one line on stderr, containing every `parts`.
void expect_clean_error(const CmdResult& r, const std::vector<std::string>& parts) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(line_count(r.err) == 1);
  for (const std::string& p : parts) CHECK(r.err.find(p) != std::string::npos);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

struct CompiledMlp {
  TempDir dir;
  std::string plan = dir / "mlp.ofp";
  std::string weights = dir / "mlp.safetensors";
  CompiledMlp() { REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + plan, dir).exit_code == 0); }
  CmdResult run(const std::string& plan_path, const std::string& input = fixture("mlp_input.npy")) const {
    return run_cmd(bin("ofrun") + " " + plan_path + " --input input=" + input, dir);
  }
};

}  // namespace

TEST_CASE("errors: ofc on a missing model file", "[e2e]") {
  TempDir dir;
  CmdResult r = run_cmd(bin("ofc") + " " + (dir / "nope.onnx") + " -o " + (dir / "p.ofp"), dir);
  expect_clean_error(r, {"ofc: error:", "nope.onnx", "cannot open"});
  CHECK_FALSE(std::filesystem::exists(dir / "p.ofp"));
}

TEST_CASE("errors: ofc on a file that is not ONNX", "[e2e]") {
  TempDir dir;
  CmdResult r = run_cmd(bin("ofc") + " " + fixture("not_onnx.onnx") + " -o " + (dir / "p.ofp"), dir);
  expect_clean_error(r, {"not_onnx.onnx", "not an ONNX model"});
  CHECK_FALSE(std::filesystem::exists(dir / "p.ofp"));
}

TEST_CASE("errors: ofc on an unsupported operator names it, its node and the supported list", "[e2e]") {
  TempDir dir;
  CmdResult r = run_cmd(bin("ofc") + " " + fixture("unsupported.onnx") + " -o " + (dir / "p.ofp"), dir);
  expect_clean_error(r, {"unsupported.onnx", "Hardmax", "node '", "supported: ", "Conv", "Gemm"});
  CHECK_FALSE(std::filesystem::exists(dir / "p.ofp"));
  CHECK_FALSE(std::filesystem::exists(dir / "p.safetensors"));
}

TEST_CASE("errors: a plan on GPUs compiles, ofdump shows it, and ofrun on a machine without a GPU refuses it in one line", "[e2e]") {
  TempDir dir;
  const std::string plan = dir / "gpu.ofp";
  const CmdResult c = run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + plan + " --devices 1:cuda", dir);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const CmdResult d = run_cmd(bin("ofdump") + " " + plan, dir);
  CHECK(d.exit_code == 0);
  CHECK(d.out.find("cuda:0") != std::string::npos);
  // "this machine has 0 CUDA devices", or in a build without CUDA "built without CUDA".
  expect_clean_error(run_cmd(bin("ofrun") + " " + plan + " --input input=" + fixture("mlp_input.npy"), dir), {"gpu.ofp", "GPU", "--emulate-gpus"});
  expect_clean_error(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + plan + " --devices 1:gpu", dir), {"--devices", "N:cuda"});
}

TEST_CASE("errors: ofrun on a missing plan", "[e2e]") {
  TempDir dir;
  expect_clean_error(run_cmd(bin("ofrun") + " " + (dir / "none.ofp") + " --input input=x.npy", dir), {"none.ofp", "cannot open"});
}

TEST_CASE("errors: ofrun and ofdump on a truncated plan", "[e2e]") {
  CompiledMlp m;
  std::string bytes = slurp(m.plan);
  std::string cut = m.dir / "cut.ofp";
  write_bytes(cut, bytes.substr(0, bytes.size() / 2));
  expect_clean_error(m.run(cut), {"cut.ofp", "truncated"});
  expect_clean_error(run_cmd(bin("ofdump") + " " + cut, m.dir), {"cut.ofp", "truncated"});
  write_bytes(cut, bytes.substr(0, 10));
  expect_clean_error(m.run(cut), {"cut.ofp", "not an of plan"});
}

TEST_CASE("errors: ofrun on a plan with a flipped byte in the middle", "[e2e]") {
  CompiledMlp m;
  std::string bytes = slurp(m.plan);
  bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 0x5a);
  std::string bad = m.dir / "flipped.ofp";
  write_bytes(bad, bytes);
  expect_clean_error(m.run(bad), {"flipped.ofp", "checksum mismatch"});
}

TEST_CASE("errors: ofrun when the weights file is missing or the wrong size", "[e2e]") {
  CompiledMlp m;
  std::string weights = slurp(m.weights);
  std::filesystem::remove(m.weights);
  expect_clean_error(m.run(m.plan), {"mlp.safetensors", "cannot open"});
  write_bytes(m.weights, weights.substr(0, weights.size() - 100));
  expect_clean_error(m.run(m.plan), {"mlp.safetensors", "bytes, the plan expects"});
  weights[weights.size() - 5] ^= 1;
  write_bytes(m.weights, weights);
  expect_clean_error(m.run(m.plan), {"mlp.safetensors", "checksum mismatch"});
}

TEST_CASE("errors: ofrun on an input .npy of the wrong shape or dtype", "[e2e]") {
  CompiledMlp m;
  std::vector<float> f(64 * 783, 0.f);
  of::write_npy(m.dir / "shape.npy", of::DType::f32, {64, 783}, f.data());
  expect_clean_error(m.run(m.plan, m.dir / "shape.npy"), {"shape.npy", "[64,783]", "input 'input' needs f32 [64,784]"});
  of::write_npy(m.dir / "rows.npy", of::DType::f32, {63, 784}, std::vector<float>(63 * 784).data());
  expect_clean_error(m.run(m.plan, m.dir / "rows.npy"), {"rows.npy", "[63,784]"});
  std::vector<int64_t> i(64 * 784, 0);
  of::write_npy(m.dir / "dtype.npy", of::DType::i64, {64, 784}, i.data());
  expect_clean_error(m.run(m.plan, m.dir / "dtype.npy"), {"dtype.npy", "i64"});
  write_bytes(m.dir / "junk.npy", "\x93NUMPY garbage");
  expect_clean_error(m.run(m.plan, m.dir / "junk.npy"), {"junk.npy"});
}

TEST_CASE("errors: ofrun with a wrong input name or no input", "[e2e]") {
  CompiledMlp m;
  expect_clean_error(run_cmd(bin("ofrun") + " " + m.plan + " --input nope=" + fixture("mlp_input.npy"), m.dir), {"'nope'", "inputs: input"});
  expect_clean_error(run_cmd(bin("ofrun") + " " + m.plan, m.dir), {"input 'input' is not fed"});
  expect_clean_error(run_cmd(bin("ofrun") + " " + m.plan + " --input input=" + fixture("mlp_input.npy") + " --output y=o.npy", m.dir),
                     {"'y'", "outputs: logits"});
  expect_clean_error(run_cmd(bin("ofrun") + " " + m.plan + " --input input=" + fixture("mlp_input.npy") + " --slots 3", m.dir),
                     {"--slots 3", "recompile"});
}
