// SPDX-License-Identifier: Apache-2.0
// The plan codec round trip and the runtime verifier: each corruption fails naming the field.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "runtime/plan/load.h"
#include "schemas/plan_codec.h"
#include "schemas/plan_format.h"

using namespace of;

namespace {

// source -> relu -> sink, with one variable, on one CPU device.
plan::Plan tiny_plan() {
  plan::Plan p;
  p.version = plan_format::kVersion;
  p.model = "tiny";
  p.job.batch = 2;
  p.devices = {plan::DeviceRef{}};
  p.tensors = {{"x", {{2, 4}, DType::f32}}, {"y", {{2, 4}, DType::f32}}, {"w", {{4}, DType::f32}}};
  p.arenas = {plan::Arena{0, 0, 1024}};
  p.regsts = {plan::Regst{0, 0, {1}, 2, 64, 0, {0, 64}, {plan::Blob{0, {{2, 4}, DType::f32}, 0, 32}}},
              plan::Regst{1, 1, {2}, 2, 64, 0, {128, 192}, {plan::Blob{1, {{2, 4}, DType::f32}, 0, 32}}}};
  p.variables = {plan::Variable{0, 2, "w", 0, 256, 16}};
  plan::Task src{.id = 0, .kind = plan::TaskKind::source, .name = "source", .op = "Source"};
  src.out_regsts = {0};
  src.io_names = {"x"};
  plan::Task relu{.id = 1, .kind = plan::TaskKind::compute, .name = "r", .op = "Relu", .kernel = "relu"};
  relu.inputs = {plan::TaskInput{plan::InputKind::regst, 0, 0}};
  relu.in_regsts = {0};
  relu.out_regsts = {1};
  relu.attrs.set_floats("alpha", {0.5f});
  plan::Task sink{.id = 2, .kind = plan::TaskKind::sink, .name = "sink", .op = "Sink"};
  sink.inputs = {plan::TaskInput{plan::InputKind::regst, 1, 0}};
  sink.in_regsts = {1};
  sink.io_names = {"y"};
  p.tasks = {src, relu, sink};
  p.weights = "tiny.safetensors";
  return p;
}

std::string verify_error(const plan::Plan& p) {
  try {
    runtime::verify_plan(p, "p.ofp");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plan_codec: encode then decode gives the same plan", "[runtime]") {
  plan::Plan p = tiny_plan();
  std::vector<uint8_t> bytes = plan::encode(p);
  plan::Plan q = plan::decode(bytes.data(), bytes.size(), "p.ofp");
  CHECK(q.model == "tiny");
  CHECK(q.job.batch == 2);
  REQUIRE(q.tasks.size() == 3);
  CHECK(q.tasks[1].kernel == "relu");
  CHECK(q.tasks[1].attrs.get_floats("alpha") == std::vector<float>{0.5f});
  CHECK(q.tasks[2].io_names == std::vector<std::string>{"y"});
  CHECK(q.regsts[1].offsets == std::vector<uint64_t>{128, 192});
  CHECK(q.regsts[0].blobs[0].desc.shape == Shape{2, 4});
  CHECK(q.variables[0].key == "w");
  CHECK(q.tensors[2].name == "w");
  CHECK(plan::encode(q) == bytes);
  CHECK(verify_error(q).empty());
}

TEST_CASE("plan_codec: every truncation and every flipped byte is refused", "[runtime]") {
  std::vector<uint8_t> bytes = plan::encode(tiny_plan());
  for (size_t n = 0; n < bytes.size(); n += 7)
    REQUIRE_THROWS_AS(plan::decode(bytes.data(), n, "p.ofp"), Error);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x10;
    REQUIRE_THROWS_AS(plan::decode(bad.data(), bad.size(), "p.ofp"), Error);
  }
}

TEST_CASE("verify_plan: out-of-range ids and offsets name the field", "[runtime]") {
  plan::Plan p = tiny_plan();
  p.tasks[1].inputs[0].id = 7;
  CHECK_THAT(verify_error(p), Catch::Contains("p.ofp: tasks[1].inputs[0]"));
  p = tiny_plan();
  p.regsts[1].offsets[1] = 1000;
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[1].offsets[1]") && Catch::Contains("outside arena 0"));
  p = tiny_plan();
  p.variables[0].offset = 1024 - 64;
  p.variables[0].bytes = 128;
  CHECK_THAT(verify_error(p), Catch::Contains("variables[0]"));
  p = tiny_plan();
  p.tasks[1].kernel = "gelu_nope";
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].kernel") && Catch::Contains("no kernel 'gelu_nope' for cpu:f32"));
  p = tiny_plan();
  p.regsts[0].slots = 0;
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[0].slots"));
  p = tiny_plan();
  p.regsts[0].blobs[0].desc.shape = {1, 4};
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[0].blobs[0].bytes"));
  p = tiny_plan();
  p.arenas[0].bytes = uint64_t(1) << 62;
  CHECK_THAT(verify_error(p), Catch::Contains("arenas[0].bytes") && Catch::Contains("exceed"));
}

TEST_CASE("verify_plan: a register read before it is produced (a cycle) is refused", "[runtime]") {
  plan::Plan p = tiny_plan();
  // relu reads its own output: a one-task cycle.
  p.regsts[0].consumers = {};
  p.regsts[1].consumers = {1, 2};
  p.tasks[1].inputs = {plan::TaskInput{plan::InputKind::regst, 1, 0}};
  p.tasks[1].in_regsts = {1};
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].in_regsts[0]") && Catch::Contains("cycle"));
}

TEST_CASE("verify_plan: parallel-plan fields out of range name the field", "[runtime]") {
  plan::Plan p = tiny_plan();
  p.tensors[2].full_shape = {8};
  p.tensors[2].shard_begin = {4};
  CHECK(verify_error(p).empty());  // w is the second half of an [8] tensor
  p.tensors[2].shard_begin = {5};
  CHECK_THAT(verify_error(p), Catch::Contains("tensors[2].shard_begin") && Catch::Contains("outside [8]"));
  p.tensors[2].shard_begin = {-1};
  CHECK_THAT(verify_error(p), Catch::Contains("tensors[2].shard_begin"));
  p.tensors[2].shard_begin = {0, 0};
  CHECK_THAT(verify_error(p), Catch::Contains("tensors[2].shard_begin") && Catch::Contains("rank"));
  p = tiny_plan();
  p.tensors[2].full_shape = {int64_t(1) << 62};
  p.tensors[2].shard_begin = {0};
  CHECK_THAT(verify_error(p), Catch::Contains("tensors[2].full_shape"));
  p = tiny_plan();
  p.regsts[0].acts_per_piece = 0;
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[0].acts_per_piece"));
  p = tiny_plan();
  p.regsts[0].pieces_per_version = 2;  // only a persistent register has versions
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[0].pieces_per_version"));
  p = tiny_plan();
  p.tasks[1].stage = 3;
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].stage"));
}
