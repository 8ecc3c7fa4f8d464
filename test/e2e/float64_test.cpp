// SPDX-License-Identifier: Apache-2.0
// numpy's default dtype is float64: ofrun reads such features (--data npy:) and inputs (--input)
// as float32, says so in one note line on stderr, and computes what the float32 file gives.
#include <catch2/catch.hpp>

#include <filesystem>

#include "common/npy.h"
#include "e2e/e2e_util.h"

using namespace of::e2e;

namespace {

// The fixture's f32 features written as float64 (exact: every float is a double).
void write_f64_copy(const std::string& from, const std::string& to) {
  of::NpyArray x = of::read_npy(from);
  std::vector<double> d(x.data.size() / 4);
  for (size_t i = 0; i < d.size(); ++i) d[i] = reinterpret_cast<const float*>(x.data.data())[i];
  // write_npy knows no f64: write the header by hand.
  std::string dims;
  for (int64_t s : x.shape) dims += std::to_string(s) + ", ";
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += char(header.size() & 0xff);
  file += char(header.size() >> 8);
  file += header;
  file.append(reinterpret_cast<const char*>(d.data()), d.size() * 8);
  std::ofstream(to, std::ios::binary) << file;
}

}  // namespace

TEST_CASE("float64: inference inputs are converted with a note and give the float32 outputs", "[e2e]") {
  TempDir d;
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "mlp.ofp"), d).exit_code == 0);
  write_f64_copy(fixture("mlp_input.npy"), d / "x64.npy");
  auto run = [&](const std::string& input, const std::string& out) {
    return run_cmd(bin("ofrun") + " " + (d / "mlp.ofp") + " --input input=" + input + " --output logits=" + (d / out), d);
  };
  CmdResult r64 = run(d / "x64.npy", "y64.npy");
  REQUIRE(r64.exit_code == 0);
  CHECK(r64.err == "ofrun: note: " + (d / "x64.npy") + ": float64 array converted to float32 for input 'input'\n");
  REQUIRE(run(fixture("mlp_input.npy"), "y32.npy").exit_code == 0);
  CHECK(of::read_npy(d / "y64.npy").data == of::read_npy(d / "y32.npy").data);
}

TEST_CASE("float64: training features are converted with a note and train as float32", "[e2e]") {
  TempDir d;
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "g.ofp") + " --train --loss cross_entropy", d).exit_code == 0);
  write_f64_copy(fixture("mlp_input.npy"), d / "x64.npy");
  auto train = [&](const std::string& features) {
    return run_cmd(bin("ofrun") + " " + (d / "g.ofp") + " --data npy:" + features + "," + fixture("mlp_labels.npy") +
                       " --steps 2 --no-shuffle",
                   d);
  };
  CmdResult r64 = train(d / "x64.npy"), r32 = train(fixture("mlp_input.npy"));
  REQUIRE(r64.exit_code == 0);
  REQUIRE(r32.exit_code == 0);
  CHECK(r64.err.find("ofrun: note: " + (d / "x64.npy") + ": float64 features converted to float32\n") == 0);
  auto last_loss = [](const std::string& out) { const size_t at = out.rfind("last loss"); return out.substr(at, out.find('\n', at) - at); };  // the loss's line only
  CHECK(last_loss(r64.out) == last_loss(r32.out));
}
