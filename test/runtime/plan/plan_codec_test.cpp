// SPDX-License-Identifier: Apache-2.0
// The plan codec round trip and the runtime verifier: each corruption fails naming the field.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/plan/load.h"
#include "runtime/plan/plan_diff.h"
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

// tiny_plan() with every field of plan_model.h set to a value that is not its default (not a plan
// that verifies: a round trip of every field).
plan::Plan every_field_plan() {
  plan::Plan p = tiny_plan();
  p.job = plan::Job{.kind = plan::JobKind::train, .batch = 3, .pieces = 5, .seed = 0x123456789abcull, .label = "y", .micro_batches = 4,
                    .optimizer = "adam:lr=0.001", .lr = 1e-3f, .schedule = "cosine:warmup=10", .eval_plan = "tiny.eval.ofp"};
  p.tensors[2].full_shape = {8};
  p.tensors[2].shard_begin = {4};
  p.tensors[2].model = true;
  p.tensors[1].desc.dtype = DType::i64;
  p.devices = {plan::DeviceRef{.rank = 1, .kind = 1, .index = 3}, plan::DeviceRef{.rank = 2, .kind = 0, .index = 1}};
  p.arenas.push_back(plan::Arena{1, 1, 4096});
  p.tasks[1].device = 1;
  p.tasks[1].stream = 2;
  p.tasks[1].stage = 1;
  p.tasks[1].kind = plan::TaskKind::snapshot;
  p.tasks[1].inputs.push_back(plan::TaskInput{plan::InputKind::variable, 0, 0});
  p.tasks[1].inputs.push_back(plan::TaskInput{plan::InputKind::own, 1, 2});
  p.tasks[1].inputs[0].view = {8, 1};
  p.tasks[1].attrs.set_ints("axes", {-1, 0, int64_t(1) << 40});
  p.tasks[1].attrs.set_str("mode", "constant");
  p.tasks[1].attrs.set_floats("nan", {std::numeric_limits<float>::quiet_NaN(), -0.0f, INFINITY});
  p.regsts[1].persistent = true;
  p.regsts[1].acts_per_piece = 2;
  p.regsts[1].pieces_per_version = 3;
  p.tasks[1].once_per_version = true;
  p.regsts[1].arena = 1;
  p.regsts[1].blobs[0].offset = 64;
  p.regsts[1].blobs[0].tensor = 2;
  p.variables[0].arena = 1;
  p.layouts = {plan::TensorLayout{"w", {{8}, DType::f32}, "cpu:0-1 [2]", "(S(0))", 1}};
  p.boxings = {plan::Boxing{"w", "all_gather", "(S(0))", "(B)", "r", 16, true}};
  p.buffers = {"bn.running_mean", "bn.running_var"};
  p.carried = {"unused.weight"};
  p.memory_options = {plan::MemoryOption{"--recompute", {512, 2048}}, plan::MemoryOption{"--recompute --zero 3", {256, uint64_t(1) << 40}}};
  p.prediction = plan::Prediction{0.0125, "costs.json",
                                  {plan::Candidate{"--dp 2", 0.0125, 4096, ""}, plan::Candidate{"--pp 2", 0, 0, "pipeline stage 1 of 2 would hold no forward op"}}};
  p.weights_bytes = 1234567;
  p.weights_crc32 = 0xdeadbeef;
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
  for (const plan::Plan& p : {tiny_plan(), every_field_plan()}) {
    std::vector<uint8_t> bytes = plan::encode(p);
    plan::Plan q = plan::decode(bytes.data(), bytes.size(), "p.ofp");
    CHECK(test::plan_diff(p, q) == "");  // field by field against the Plan that was encoded
    CHECK(plan::encode(q) == bytes);
  }
  std::vector<uint8_t> bytes = plan::encode(tiny_plan());
  CHECK(verify_error(plan::decode(bytes.data(), bytes.size(), "p.ofp")).empty());
  // A memory option's peaks are one per arena: another count is refused naming the field.
  plan::Plan odd = every_field_plan();
  odd.memory_options[0].peaks.push_back(1);
  bytes = plan::encode(odd);
  CHECK_THROWS_WITH(plan::decode(bytes.data(), bytes.size(), "p.ofp"), Catch::Contains("memory_options[0].peaks") && Catch::Contains("3 peaks for 2 arenas"));
  // A predicted time is for people, but a NaN or a negative one is still refused by name.
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), -1.0}) {
    plan::Plan q = every_field_plan();
    q.prediction.candidates[1].step_seconds = bad;
    bytes = plan::encode(q);
    CHECK_THROWS_WITH(plan::decode(bytes.data(), bytes.size(), "p.ofp"), Catch::Contains("prediction.candidates[1].step_seconds"));
    q = every_field_plan();
    q.prediction.step_seconds = bad;
    bytes = plan::encode(q);
    CHECK_THROWS_WITH(plan::decode(bytes.data(), bytes.size(), "p.ofp"), Catch::Contains("prediction.step_seconds"));
  }
}

TEST_CASE("plan_codec: a plan of more than a million tables (a thousand devices) decodes", "[runtime]") {
  // FlatBuffers' verifier stops at a million tables by default; ofc writes more for plans over a
  // thousand devices (the GPT on 128x8), which ofrun then refused as corrupt.
  plan::Plan p = every_field_plan();
  p.prediction.candidates.resize(1100000, p.prediction.candidates[0]);
  const std::vector<uint8_t> bytes = plan::encode(p);
  const plan::Plan q = plan::decode(bytes.data(), bytes.size(), "p.ofp");
  CHECK(q.prediction.candidates.size() == 1100000);
}

TEST_CASE("plan_diff: a change to a field is found and named", "[runtime]") {
  const plan::Plan p = every_field_plan();
  CHECK(test::plan_diff(p, p) == "");
  auto changed = [&p](auto mutate) {
    plan::Plan q = p;
    mutate(q);
    return test::plan_diff(p, q);
  };
  CHECK(changed([](plan::Plan& q) { q.job.lr = 2e-3f; }).rfind("job.lr: ", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.job.eval_plan = ""; }).rfind("job.eval_plan: ", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.tensors[2].model = false; }) == "tensors[2].model: 1 != 0");
  CHECK(changed([](plan::Plan& q) { q.devices[0].kind = 0; }) == "devices[0].kind: 1 != 0");
  CHECK(changed([](plan::Plan& q) { q.tasks[1].attrs.set_floats("nan", {0.f, -0.0f, INFINITY}); }).rfind("tasks[1].attrs[3].floats[0]: ", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.tasks[1].attrs.set_floats("nan", {std::numeric_limits<float>::quiet_NaN(), 0.0f, INFINITY}); })
            .rfind("tasks[1].attrs[3].floats[1]: ", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.tasks[1].inputs[2].blob = 1; }) == "tasks[1].inputs[2].blob: 2 != 1");
  CHECK(changed([](plan::Plan& q) { q.regsts[1].pieces_per_version = 1; }) == "regsts[1].pieces_per_version: 3 != 1");
  CHECK(changed([](plan::Plan& q) { q.tasks[1].once_per_version = false; }) == "tasks[1].once_per_version: 1 != 0");
  CHECK(changed([](plan::Plan& q) { q.regsts[0].blobs[0].desc.shape = {2, 5}; }) == "regsts[0].blobs[0].desc.shape: [2,4] != [2,5]");
  CHECK(changed([](plan::Plan& q) { q.boxings[0].backward = false; }) == "boxings[0].backward: 1 != 0");
  CHECK(changed([](plan::Plan& q) { q.layouts.clear(); }) == "layouts.size(): 1 != 0");
  CHECK(changed([](plan::Plan& q) { q.carried.clear(); }) == "carried: [unused.weight] != []");
  CHECK(changed([](plan::Plan& q) { q.memory_options[1].peaks[0] = 1; }).rfind("memory_options[1].peaks", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.weights_crc32 = 0; }).rfind("weights_crc32: ", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.prediction.step_seconds = 1; }).rfind("prediction.step_seconds: ", 0) == 0);
  CHECK(changed([](plan::Plan& q) { q.prediction.candidates[1].refused = ""; }).rfind("prediction.candidates[1].refused: ", 0) == 0);
}

TEST_CASE("plan_codec: every truncation and every flipped byte is refused", "[runtime]") {
  std::vector<uint8_t> bytes = plan::encode(tiny_plan());
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n << " of " << bytes.size() << " bytes");
    REQUIRE_THROWS_AS(plan::decode(bytes.data(), n, "p.ofp"), Error);
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    INFO("byte " << i << " flipped");
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x10;
    REQUIRE_THROWS_AS(plan::decode(bad.data(), bad.size(), "p.ofp"), Error);
  }
}

TEST_CASE("plan_codec: 8-byte numbers a corrupt plan places off their alignment are refused, not read", "[runtime]") {
  // The FlatBuffers verifier checks a vector's length is aligned, not its elements: a plan whose
  // offset to a task input's view points 4 bytes further reads the first element's low half as
  // the length and the numbers at an odd multiple of 4 (the fuzzer's find, from CI).
  plan::Plan p = tiny_plan();
  p.tasks[1].inputs[0].view = {3, 7};
  std::vector<uint8_t> bytes = plan::encode(p);
  const size_t body = plan_format::kHeaderBytes;
  auto u32_at = [&bytes](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  const uint8_t view[20] = {2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0};
  auto found = std::search(bytes.begin() + body, bytes.end(), std::begin(view), std::end(view));
  REQUIRE(found != bytes.end());
  const size_t length_at = size_t(found - bytes.begin());
  REQUIRE((length_at - body) % 8 == 4);  // as an encoder places it: the numbers 8-aligned
  std::vector<size_t> refs;  // the uoffset fields that point at the view (relative to themselves)
  for (size_t at = body; at + 4 <= length_at; at += 4)
    if (at + u32_at(at) == length_at) refs.push_back(at);
  REQUIRE(refs.size() == 1);
  const uint32_t shifted = u32_at(refs[0]) + 4;
  std::memcpy(bytes.data() + refs[0], &shifted, 4);
  const uint32_t crc = crc32_of(bytes.data() + body, bytes.size() - body);
  std::memcpy(bytes.data() + 16, &crc, 4);
  CHECK_THROWS_WITH(plan::decode(bytes.data(), bytes.size(), "p.ofp"),
                    Catch::Contains("p.ofp") && Catch::Contains("tasks[1].inputs.view") && Catch::Contains("misaligned 8-byte numbers"));
}

TEST_CASE("verify_plan: a view reads a register blob of a compute task as another shape of as many elements", "[runtime]") {
  plan::Plan p = tiny_plan();
  p.tasks[1].inputs[0].view = {8};
  CHECK(verify_error(p).empty());
  p.tasks[1].inputs[0].view = {1, 2, 1, 4};
  CHECK(verify_error(p).empty());
  p.tasks[1].inputs[0].view = {3, 3};
  CHECK(verify_error(p) == "p.ofp: tasks[1].inputs[0].view: [3,3] has 9 elements, its blob [2,4] has 8");
  p.tasks[1].inputs[0].view = {-2, -4};
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].inputs[0].view: dimension -2 is negative"));
  p.tasks[1].inputs[0].view = {int64_t(1) << 40, int64_t(1) << 40};
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].inputs[0].view") && Catch::Contains("too large"));
  p = tiny_plan();
  p.tasks[2].inputs[0].view = {8};  // the sink
  CHECK(verify_error(p) == "p.ofp: tasks[2].inputs[0].view: only a compute or collective task's register input may be read as a view");
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

TEST_CASE("verify_plan: slots and variables that share bytes are refused by name", "[runtime]") {
  plan::Plan p = tiny_plan();
  CHECK(verify_error(p).empty());
  p.regsts[1].offsets[0] = 64;  // regst 0's second slot is [64, 128)
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[1].offsets[0]") && Catch::Contains("regsts[0].offsets[1]") && Catch::Contains("overlaps"));
  p = tiny_plan();
  p.regsts[0].offsets[1] = 0;  // two slots of one register
  CHECK_THAT(verify_error(p), Catch::Contains("regsts[0].offsets") && Catch::Contains("overlaps"));
  p = tiny_plan();
  p.variables[0].offset = 192;  // inside regst 1's second slot [192, 256)
  CHECK_THAT(verify_error(p), Catch::Contains("overlaps") && Catch::Contains("variables[0]"));
  p = tiny_plan();
  p.variables[0].offset = 320;  // touching ([256, 320) is free) is not sharing
  p.regsts[1].offsets[1] = 256;
  CHECK(verify_error(p).empty());
}

namespace {

// tiny_plan() on two devices: relu runs on device 1 and reads the source's register through a
// transfer task (id 1) that writes its mirror on device 1; the sink reads relu's output through
// another transfer (id 3) back on device 0.
plan::Plan two_device_plan() {
  plan::Plan p = tiny_plan();
  p.devices = {plan::DeviceRef{.index = 0}, plan::DeviceRef{.index = 1}};
  p.arenas = {plan::Arena{0, 0, 1024}, plan::Arena{1, 1, 1024}};
  p.tasks[1].device = 1;
  p.variables.clear();
  plan::Regst mirror_in = p.regsts[0], mirror_out = p.regsts[1];
  mirror_in.id = 2;
  mirror_in.producer = 1;
  mirror_in.arena = 1;
  mirror_in.consumers = {2};
  mirror_out.id = 3;
  mirror_out.producer = 3;
  mirror_out.arena = 0;
  mirror_out.offsets = {256, 320};
  mirror_out.consumers = {4};
  p.regsts[1].arena = 1;
  p.regsts[1].producer = 2;
  p.regsts[1].consumers = {3};
  p.regsts.push_back(mirror_in);
  p.regsts.push_back(mirror_out);
  plan::Task in{.id = 1, .kind = plan::TaskKind::transfer, .name = "source/transfer/d1", .op = "Transfer", .device = 1};
  in.inputs = {plan::TaskInput{plan::InputKind::regst, 0, 0}};
  in.in_regsts = {0};
  in.out_regsts = {2};
  plan::Task relu = p.tasks[1];
  relu.id = 2;
  relu.inputs[0].id = 2;
  relu.in_regsts = {2};
  plan::Task out{.id = 3, .kind = plan::TaskKind::transfer, .name = "r/transfer/d0", .op = "Transfer", .device = 0};
  out.inputs = {plan::TaskInput{plan::InputKind::regst, 1, 0}};
  out.in_regsts = {1};
  out.out_regsts = {3};
  plan::Task sink = p.tasks[2];
  sink.id = 4;
  sink.inputs[0].id = 3;
  sink.in_regsts = {3};
  p.regsts[0].consumers = {1};
  p.tasks = {p.tasks[0], in, relu, out, sink};
  return p;
}

}  // namespace

TEST_CASE("verify_plan: a task that touches another device's arena is refused unless it is a transfer", "[runtime]") {
  plan::Plan p = two_device_plan();
  CHECK(verify_error(p).empty());
  p.regsts[1].arena = 0;  // relu on device 1 writes device 0's arena
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[2].out_regsts[0]") && Catch::Contains("lives on device 0, the task on device 1"));
  p = two_device_plan();
  p.tasks[2].device = 0;  // relu reads the mirror on device 1 from device 0
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[2].in_regsts[0]") && Catch::Contains("only a transfer task reads another device"));
  p = two_device_plan();
  p.tasks[1].device = 0;  // a "transfer" within device 0 that writes device 1
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1]"));
  p = two_device_plan();
  p.regsts[2].blobs[0].desc.shape = {8};  // the mirror's blob no longer matches what it reads
  p.regsts[2].blobs[0].bytes = 32;
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1]") && Catch::Contains("blobs must match its inputs"));
  p = two_device_plan();
  p.tasks[1].in_regsts.push_back(1);  // a transfer reads one register
  p.regsts[1].consumers.push_back(1);
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1]"));
  p = two_device_plan();
  p.variables = {plan::Variable{0, 2, "w", 1, 512, 16}};
  p.tasks[1].inputs[0] = plan::TaskInput{plan::InputKind::variable, 0, 99};  // a transfer reads the other device's tensors only
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1]") && Catch::Contains("blob by blob"));
  p = two_device_plan();
  p.arenas[1].device = 2;
  CHECK_THAT(verify_error(p), Catch::Contains("arenas[1].device") && Catch::Contains("out of range"));
}

TEST_CASE("verify_plan: a control register may order a task after another device's, on one rank only", "[runtime]") {
  plan::Plan p = two_device_plan();
  // relu (device 1) hands a control register to the sink (device 0): it carries no bytes, so
  // the sink touches no memory of device 1.
  plan::Regst control{.id = 4, .producer = 2, .consumers = {4}, .slots = 2, .arena = 1, .offsets = {0, 0}};
  p.regsts.push_back(control);
  p.tasks[2].out_regsts.push_back(4);
  p.tasks[4].in_regsts.push_back(4);
  CHECK(verify_error(p).empty());
  // (A register with bytes is still read on its own device only: the case above.)
  p.devices[1].rank = 1;  // ofc adds them within a rank only (across ranks a reader reads a landed copy)
  CHECK(verify_error(p) == "p.ofp: tasks[4].in_regsts[1]: control register 4 lives on rank 1, the task on rank 0: it orders tasks of one rank only");
}

TEST_CASE("verify_plan: a collective task reads other devices of its own rank only", "[runtime]") {
  plan::Plan p = two_device_plan();
  plan::Task& part = p.tasks[1];  // the transfer onto device 1, as one device's part of a gather
  part.kind = plan::TaskKind::collective;
  part.op = "AllGather";
  part.kernel = "collective_part";
  part.attrs.set_ints("pieces", {0, 0, 0, 0, 0, 0, 2, 4});
  CHECK(verify_error(p).empty());
  p.devices[1].rank = 1;  // device 1 on another rank than the register it reads
  CHECK(verify_error(p) ==
        "p.ofp: tasks[1].in_regsts[0]: register 0 lives on rank 0, the collective task on rank 1: a collective task reads its own rank's devices only");
  p.devices[1].rank = 0;
  p.regsts[2].arena = 0;  // it writes the other device's arena
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].out_regsts[0]") && Catch::Contains("lives on device 0, the task on device 1"));
  p = two_device_plan();
  p.tasks[1].kind = plan::TaskKind::collective;
  p.tasks[1].kernel = "collective_nope";
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[1].kernel"));
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

TEST_CASE("verify_plan: one lead source reads nothing and a rank's source reads no tensor but is paced by one register", "[runtime]") {
  // tiny_plan() plus a second source (task 3, its own register 2).
  auto with_second_source = [] {
    plan::Plan p = tiny_plan();
    plan::Task second = p.tasks[0];
    second.id = 3;
    second.name = "source@0";
    second.out_regsts = {2};
    p.regsts.push_back(plan::Regst{2, 3, {}, 2, 64, 0, {384, 448}, {plan::Blob{0, {{2, 4}, DType::f32}, 0, 32}}});
    p.tasks.push_back(second);
    return p;
  };
  // Paced by the lead's register, reading none of it: a rank's source.
  plan::Plan p = with_second_source();
  p.tasks[3].in_regsts = {0};
  p.regsts[0].consumers.push_back(3);
  INFO(verify_error(p));
  CHECK(verify_error(p).empty());
  // Reading a tensor of it.
  p.tasks[3].inputs = {plan::TaskInput{plan::InputKind::regst, 0, 0}};
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[3]") && Catch::Contains("a source task reads no tensor"));
  // Two that read nothing: each would end the stream on its own.
  p = with_second_source();
  CHECK_THAT(verify_error(p), Catch::Contains("exactly one source that reads nothing") && Catch::Contains("has 2"));
}

TEST_CASE("verify_plan: a source or sink that names an input or output twice is refused", "[runtime]") {
  // ofrun feeds and collects by name: two blobs of one name would read one array as both (the
  // fuzzer's plan/source_input_named_twice read past the smaller).
  plan::Plan p = tiny_plan();
  p.regsts[0].blobs.push_back(plan::Blob{1, {{2, 4}, DType::f32}, 64, 32});
  p.regsts[0].slot_bytes = 128;
  p.regsts[0].offsets = {512, 640};
  p.tasks[0].io_names = {"x", "x"};
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[0].io_names") && Catch::Contains("names an input twice"));
  p.tasks[0].io_names = {"x", "x2"};
  INFO(verify_error(p));
  CHECK(verify_error(p).empty());
  p.tasks[2].inputs.push_back(plan::TaskInput{plan::InputKind::regst, 1, 0});
  p.tasks[2].io_names = {"y", "y"};
  CHECK_THAT(verify_error(p), Catch::Contains("tasks[2].io_names") && Catch::Contains("names an output twice"));
}
