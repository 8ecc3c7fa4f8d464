// SPDX-License-Identifier: Apache-2.0
// --no-weight-decay GLOB and --no-weight-decay-1d: the tensors a PyTorch param group with
// weight_decay=0 would hold (biases, normalization weights) are updated without decay, the rest
// with the optimizer's; a pattern that names nothing is refused.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

CompileOptions adamw(std::vector<std::string> no_decay, bool one_d, const std::string& decay = "0.1") {
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  o.optimizer = "adamw:lr=0.001,weight_decay=" + decay;
  o.no_weight_decay = std::move(no_decay);
  o.no_weight_decay_1d = one_d;
  return o;
}

// Each update task's weight_decay, by the weight it updates.
std::map<std::string, float> decay_of_updates(const CompileOptions& o) {
  const Compilation c = compile_model(fixture("mlp.onnx"), o);
  std::map<std::string, float> out;
  for (const Task& t : c.tasks.tasks)
    if (t.kernel == "adam_update") out[t.name.substr(std::string("update/").size())] = t.attrs.get_float("weight_decay", -1);
  return out;
}

}  // namespace

TEST_CASE("weight decay: --no-weight-decay and --no-weight-decay-1d leave biases out, as a torch param group would", "[compiler]") {
  const std::map<std::string, float> all{{"fc1.weight", 0.1f}, {"fc1.bias", 0.1f}, {"fc2.weight", 0.1f},
                                         {"fc2.bias", 0.1f},   {"fc3.weight", 0.1f}, {"fc3.bias", 0.1f}};
  CHECK(decay_of_updates(adamw({}, false)) == all);
  const std::map<std::string, float> no_bias{{"fc1.weight", 0.1f}, {"fc1.bias", 0.0f}, {"fc2.weight", 0.1f},
                                             {"fc2.bias", 0.0f},   {"fc3.weight", 0.1f}, {"fc3.bias", 0.0f}};
  CHECK(decay_of_updates(adamw({"*.bias"}, false)) == no_bias);
  CHECK(decay_of_updates(adamw({}, true)) == no_bias);
  std::map<std::string, float> two = all;
  two["fc3.weight"] = two["fc1.bias"] = 0.0f;
  CHECK(decay_of_updates(adamw({"fc3.weight", "fc1.b*"}, false)) == two);
}

TEST_CASE("weight decay: a pattern that names no trained tensor is refused", "[compiler]") {
  CHECK_THROWS_WITH(compile_model(fixture("mlp.onnx"), adamw({"*.bias", "*norm*"}, false)),
                    Catch::EndsWith("--no-weight-decay pattern '*norm*' matches no trained tensor of the model"));
  const std::map<std::string, float> none{{"fc1.weight", 0.0f}, {"fc1.bias", 0.0f}, {"fc2.weight", 0.0f},
                                          {"fc2.bias", 0.0f},   {"fc3.weight", 0.0f}, {"fc3.bias", 0.0f}};
  CHECK(decay_of_updates(adamw({"*.bias"}, true, "0")) == none);  // a sweep's weight_decay=0 keeps its flags
}
