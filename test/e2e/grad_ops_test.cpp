// SPDX-License-Identifier: Apache-2.0
// Every operator's gradient rule end to end: for each case of fixtures/grad_ops/
// (make_grad_fixtures.py), `ofc --loss mse --label target --gradients` on a model whose float
// inputs are x_i = in{i} + z{i} (z{i} a zero initializer), run by ofrun, gives the loss and each
// z{i}.grad (= d loss / d x_i) of the float64 PyTorch reference, itself checked against finite
// differences, within 1e-4 relative.
#include <catch2/catch.hpp>
#include <fstream>

#include "e2e/e2e_util.h"

using namespace of::e2e;

TEST_CASE("grad ops: every operator's gradients match the float64 reference", "[e2e]") {
  std::ifstream cases(fixture("grad_ops/cases.txt"));
  REQUIRE(cases.good());
  std::string name;
  int n_inputs = 0, count = 0;
  while (cases >> name >> n_inputs) {
    ++count;
    DYNAMIC_SECTION("case " << name) {
      TempDir d;
      const std::string base = fixture("grad_ops/" + name);
      CmdResult c = run_cmd(bin("ofc") + " " + base + ".onnx -o " + (d / "g.ofp") + " --loss mse --label target --gradients", d);
      INFO("ofc stderr: " << c.err);
      REQUIRE(c.exit_code == 0);
      std::string cmd = bin("ofrun") + " " + (d / "g.ofp") + " --input target=" + base + ".target.npy --output loss=" + (d / "loss.npy");
      for (int i = 0; i < n_inputs; ++i) {
        const std::string k = std::to_string(i);
        cmd += " --input in" + k + "=" + base + ".in" + k + ".npy --output z" + k + ".grad=" + (d / ("g" + k + ".npy"));
      }
      CmdResult r = run_cmd(cmd, d);
      INFO("ofrun stderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      {
        of::NpyArray got = of::read_npy(d / "loss.npy"), want = of::read_npy(base + ".loss.npy");
        REQUIRE(got.dtype == of::DType::f32);
        REQUIRE(got.shape == want.shape);
        INFO("loss " << *reinterpret_cast<const float*>(got.data.data()) << ", want " << *reinterpret_cast<const float*>(want.data.data()));
        CHECK(relative_error(got, want) < 1e-4);
      }
      for (int i = 0; i < n_inputs; ++i) {
        const std::string k = std::to_string(i);
        INFO("d loss / d x" << i << " (z" << i << ".grad)");
        of::NpyArray got = of::read_npy(d / ("g" + k + ".npy")), want = of::read_npy(base + ".grad" + k + ".npy");
        REQUIRE(got.dtype == of::DType::f32);
        REQUIRE(got.shape == want.shape);
        CHECK(relative_error(got, want) < 1e-4);
      }
    }
  }
  CHECK(count >= 50);
}
