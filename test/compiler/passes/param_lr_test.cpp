// SPDX-License-Identifier: Apache-2.0
// --param-lr GLOB=LR: a torch param group with its own lr. Each matched weight's update reads the
// step's lr times LR / the optimizer's lr (a Mul beside its gradient), the first matching pattern
// wins, and a pattern naming nothing or a malformed one is refused.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

namespace {

CompileOptions adamw(std::vector<std::string> param_lr, const std::string& lr = "0.001") {
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  o.optimizer = "adamw:lr=" + lr;
  o.param_lr = std::move(param_lr);
  return o;
}

// Each weight whose update reads a rate of its own, with that rate's multiple of the step's lr.
std::map<std::string, float> lr_multiples(const CompileOptions& o) {
  const Compilation c = compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);
  const Graph& g = c.graph;
  std::map<std::string, float> out;
  for (const Node& n : g.nodes) {
    if (n.op_type != "AdamUpdate") continue;
    const ValueId lr = n.inputs[n.inputs.size() - 2];
    const NodeId by = g.values[size_t(lr)].producer;
    if (by < 0) continue;  // the step's lr itself
    const Node& mul = g.nodes[size_t(by)];
    REQUIRE(mul.op_type == "Mul");
    CHECK(mul.name == "param_lr/" + n.name.substr(std::string("update/").size()));
    const Value& factor = g.values[size_t(mul.inputs[1])];
    REQUIRE(factor.data);
    float f = 0;
    std::memcpy(&f, factor.data->data(), 4);
    out[n.name.substr(std::string("update/").size())] = f;
  }
  return out;
}

}  // namespace

TEST_CASE("param lr: matched weights update at their group's multiple of the step's lr, the first pattern winning", "[compiler]") {
  CHECK(lr_multiples(adamw({})).empty());
  const std::map<std::string, float> want{{"fc1.weight", 0.1f}, {"fc1.bias", 0.1f}, {"fc2.bias", 2.0f}, {"fc3.bias", 2.0f}};
  const std::map<std::string, float> got = lr_multiples(adamw({"fc1.*=0.0001", "*.bias=0.002"}));
  REQUIRE(got.size() == want.size());
  for (const auto& [name, f] : want) {
    INFO(name);
    REQUIRE(got.count(name));
    CHECK(got.at(name) == Approx(f).epsilon(1e-6));  // the optimizer's lr is an f32: 0.001f
  }
}

TEST_CASE("param lr: malformed specs, patterns naming nothing and a zero base rate are refused", "[compiler]") {
  const std::string mlp = std::string(OF_FIXTURES_DIR) + "/mlp.onnx";
  CHECK_THROWS_WITH(compile_model(mlp, adamw({"fc1.*=0.1", "*norm*=0.1"})),
                    Catch::EndsWith("--param-lr pattern '*norm*' matches no trained tensor of the model"));
  for (const char* bad : {"fc1.*", "fc1.*=", "=0.1", "fc1.*=x", "fc1.*=-1", "fc1.*=nan", "fc1.*=0.1x"})
    CHECK_THROWS_WITH(compile_model(mlp, adamw({bad})), Catch::Contains("--param-lr") && Catch::Contains("is not GLOB=LR"));
  CHECK_THROWS_WITH(compile_model(mlp, adamw({"fc1.*=0.1"}, "0")), Catch::Contains("needs the optimizer's lr above 0"));
}
