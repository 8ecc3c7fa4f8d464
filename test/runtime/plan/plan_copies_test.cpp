// SPDX-License-Identifier: Apache-2.0
// Copies in the plan file (schemas/plan_copies.h): a plan whose devices repeat each other stores
// each run once and decodes to exactly the plan encoded; a copy that differs in any field is
// stored apart; a corrupt run is refused by name before it asks for memory.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <limits>
#include <memory>

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/plan/load.h"
#include "runtime/plan/plan_diff.h"
#include "schemas/plan_codec.h"
#include "schemas/plan_copies.h"
#include "schemas/plan_format.h"

using namespace of;

namespace {

// source -> relu (reads a weight) -> sink on each of `d` CPU devices of one rank, each device's
// rows of x its own box, laid out as a compiler lays out a data-parallel plan: each op's tasks on
// all devices one after the other ("r@0", "r@1", ...), and so their registers and tensors.
plan::Plan replicated_plan(int32_t d) {
  plan::Plan p;
  p.version = plan_format::kVersion;
  p.model = "replicated";
  p.job.batch = 2 * d;
  p.weights = "replicated.safetensors";
  auto at = [](const std::string& name, int32_t k) { return name + "@" + std::to_string(k); };
  for (int32_t k = 0; k < d; ++k) {
    p.devices.push_back(plan::DeviceRef{.rank = 0, .kind = 0, .index = k});
    p.arenas.push_back(plan::Arena{k, k, 1024});
  }
  // Tensors: x@k (a box of the batch), y@k, w@k.
  for (const char* name : {"x", "y", "w"})
    for (int32_t k = 0; k < d; ++k) {
      plan::LogicalTensor t{at(name, k), {{2, 4}, DType::f32}, {}, {}};
      if (name[0] == 'x') {
        t.full_shape = {2 * d, 4};
        t.shard_begin = {2 * k, 0};
      }
      if (name[0] == 'w') t.desc.shape = {4};
      p.tensors.push_back(std::move(t));
    }
  const int32_t x = 0, y = d, w = 2 * d;
  for (int32_t k = 0; k < d; ++k) p.variables.push_back(plan::Variable{k, w + k, "w", k, 256, 16});
  for (int32_t k = 0; k < d; ++k)  // source k -> regst k -> relu d + k
    p.regsts.push_back(plan::Regst{k, k, {d + k}, 2, 64, k, {0, 64}, {plan::Blob{x + k, {{2, 4}, DType::f32}, 0, 32}}});
  for (int32_t k = 0; k < d; ++k)  // relu d + k -> regst d + k -> sink 2d + k
    p.regsts.push_back(plan::Regst{d + k, d + k, {2 * d + k}, 2, 64, k, {128, 192}, {plan::Blob{y + k, {{2, 4}, DType::f32}, 0, 32}}});
  for (int32_t k = 0; k < d; ++k) {
    plan::Task src{.id = k, .kind = plan::TaskKind::source, .name = at("source", k), .op = "Source", .device = k};
    src.out_regsts = {k};
    src.io_names = {"x"};
    p.tasks.push_back(std::move(src));
  }
  for (int32_t k = 0; k < d; ++k) {
    plan::Task relu{.id = d + k, .kind = plan::TaskKind::compute, .name = at("r", k), .op = "Relu", .kernel = "relu", .device = k};
    relu.inputs = {plan::TaskInput{plan::InputKind::regst, k, 0}, plan::TaskInput{plan::InputKind::variable, k, 0}};
    relu.in_regsts = {k};
    relu.out_regsts = {d + k};
    relu.attrs.set_floats("alpha", {0.5f});
    p.tasks.push_back(std::move(relu));
  }
  for (int32_t k = 0; k < d; ++k) {
    plan::Task sink{.id = 2 * d + k, .kind = plan::TaskKind::sink, .name = at("sink", k), .op = "Sink", .device = k};
    sink.inputs = {plan::TaskInput{plan::InputKind::regst, d + k, 0}};
    sink.in_regsts = {d + k};
    sink.io_names = {"y"};
    p.tasks.push_back(std::move(sink));
  }
  return p;
}

std::vector<int64_t> counts(const std::vector<plan::Run>& runs) {
  std::vector<int64_t> out;
  for (const plan::Run& r : runs) out.push_back(r.copies.count);
  return out;
}

plan::Plan round_trip(const plan::Plan& p) {
  const std::vector<uint8_t> bytes = plan::encode(p);
  return plan::decode(bytes.data(), bytes.size(), "p.ofp");
}

// The file with the 8-byte number at `at` (in the FlatBuffer) set to `to`, its checksum made good
// again: a corrupt plan that only the checks after the checksum can catch.
std::vector<uint8_t> patched(std::vector<uint8_t> file, size_t at, int64_t to) {
  std::memcpy(file.data() + at, &to, 8);
  const uint32_t crc = crc32_of(file.data() + plan_format::kHeaderBytes, file.size() - plan_format::kHeaderBytes);
  std::memcpy(file.data() + 16, &crc, 4);
  return file;
}

}  // namespace

TEST_CASE("plan_copies: each op's tasks, registers, tensors and variables on 13 devices fold into one run each", "[runtime]") {
  const plan::Plan p = replicated_plan(13);
  CHECK(counts(plan::find_runs(p.tasks)) == std::vector<int64_t>{13, 13, 13});
  CHECK(counts(plan::find_runs(p.regsts)) == std::vector<int64_t>{13, 13});
  CHECK(counts(plan::find_runs(p.tensors)) == std::vector<int64_t>{13, 13, 13});
  CHECK(counts(plan::find_runs(p.variables)) == std::vector<int64_t>{13});
  CHECK(counts(plan::find_runs(p.arenas)) == std::vector<int64_t>{13});
  // The relu's steps: its id, device, two inputs (a register, a variable), the register it reads
  // and the one it writes, and its name's number, each one per copy.
  const std::vector<plan::Run> task_runs = plan::find_runs(p.tasks);
  const plan::Copies& relu = task_runs[1].copies;
  CHECK(relu.steps == std::vector<int64_t>{1, 1, 1, 1, 1, 1});
  CHECK(relu.name_step == 1);
  // The boxes of x advance by two rows a copy.
  CHECK(plan::find_runs(p.tensors)[0].copies.shard_step == std::vector<int64_t>{2, 0});

  const std::vector<uint8_t> folded = plan::encode(p);
  const plan::Plan q = plan::decode(folded.data(), folded.size(), "p.ofp");
  CHECK(test::plan_diff(p, q) == "");
  CHECK(plan::encode(q) == folded);
  // Stored once, the plan of 13 devices is not much larger than the plan of 2.
  CHECK(folded.size() < plan::encode(replicated_plan(2)).size() + 256);
}

TEST_CASE("plan_copies: a copy that differs in any field is stored apart, and the plan still decodes as it was", "[runtime]") {
  const int32_t d = 4;
  // Each change, made to the copy on device 2 only.
  const std::vector<std::pair<const char*, std::function<void(plan::Plan&)>>> changes{
      {"an attribute", [](plan::Plan& p) { p.tasks[d + 2].attrs.set_floats("alpha", {0.25f}); }},
      {"a NaN attribute's bits", [](plan::Plan& p) { p.tasks[d + 2].attrs.set_floats("alpha", {-std::numeric_limits<float>::quiet_NaN()}); }},
      {"a name", [](plan::Plan& p) { p.tasks[d + 2].name = "r@7"; }},
      {"a name without a number", [](plan::Plan& p) { p.tasks[d + 2].name = "r"; }},
      {"a name's number with a leading zero", [](plan::Plan& p) { p.tasks[d + 2].name = "r@02"; }},
      {"an input's register", [](plan::Plan& p) { p.tasks[d + 2].inputs[0].id = 1; }},
      {"an input's view", [](plan::Plan& p) { p.tasks[d + 2].inputs[0].view = {8}; }},
      {"the stream", [](plan::Plan& p) { p.tasks[d + 2].stream = 1; }},
      {"a register's offsets", [](plan::Plan& p) { p.regsts[d + 2].offsets[1] = 256; }},
      {"a blob's tensor", [](plan::Plan& p) { p.regsts[d + 2].blobs[0].tensor = d; }},
      {"a variable's key", [](plan::Plan& p) { p.variables[2].key = "v"; }},
      {"a box's start", [](plan::Plan& p) { p.tensors[2].shard_begin = {5, 0}; }},
      {"an arena's size", [](plan::Plan& p) { p.arenas[2].bytes = 2048; }},
  };
  for (const auto& [what, change] : changes) {
    INFO(what);
    plan::Plan p = replicated_plan(d);
    change(p);
    const plan::Plan q = round_trip(p);
    CHECK(test::plan_diff(p, q) == "");
  }
  plan::Plan p = replicated_plan(d);
  p.tasks[d + 2].attrs.set_floats("alpha", {0.25f});
  CHECK(counts(plan::find_runs(p.tasks)) == std::vector<int64_t>{4, 2, 1, 1, 4});
}

TEST_CASE("plan_copies: a corrupt count is refused by name, before it asks for memory", "[runtime]") {
  const int32_t d = 77;
  const std::vector<uint8_t> good = plan::encode(replicated_plan(d));
  auto error = [](const std::vector<uint8_t>& file) {
    try {
      plan::decode(file.data(), file.size(), "p.ofp");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Every 8-byte-aligned 77 in the FlatBuffer (the counts, and whatever else reads as 77) set to
  // a count no plan holds: none may crash, and the counts are refused by name.
  for (int64_t bad : {int64_t(1) << 40, int64_t(0), int64_t(-3)}) {
    INFO(bad);
    int refused_count = 0;
    for (size_t at = plan_format::kHeaderBytes; at + 8 <= good.size(); at += 8) {
      int64_t v;
      std::memcpy(&v, good.data() + at, 8);
      if (v == d) refused_count += error(patched(good, at, bad)).find("copies.count") != std::string::npos;
    }
    CHECK(refused_count >= 5);  // tasks, registers, tensors, variables, arenas
  }
}

TEST_CASE("plan_copies: a plan that would take more memory than the limit is refused before it is expanded, however it is stored", "[runtime]") {
  // 1000 copies of a task holding 80 KB of attributes: stored once (about 80 KB), 80 MB expanded.
  plan::Plan p = replicated_plan(1000);
  for (size_t k = 1000; k < 2000; ++k) p.tasks[k].attrs.set_ints("table", std::vector<int64_t>(10000, 7));
  const std::vector<uint8_t> bytes = plan::encode(p);
  CHECK(bytes.size() < 200000);
  CHECK_THROWS_WITH(plan::decode(bytes.data(), bytes.size(), "p.ofp"),
                    Catch::Contains("tasks[1].copies.count") && Catch::Contains("more than 64 MiB in memory"));
  CHECK(plan::decode(bytes.data(), bytes.size(), "p.ofp", uint64_t(1) << 30).tasks.size() == 3000);  // within a larger limit
  // Stored one by one (a copy's name changed so that none folds), the plan is refused alike.
  for (size_t k = 1000; k < 2000; ++k) p.tasks[k].name = "relu " + std::to_string(k);
  const std::vector<uint8_t> whole = plan::encode(p);
  CHECK(whole.size() > 40 * bytes.size());
  CHECK_THROWS_WITH(plan::decode(whole.data(), whole.size(), "p.ofp"), Catch::Contains("more than 64 MiB in memory"));
}

TEST_CASE("plan_copies: a copy on a device the cluster does not hold is refused (the encoder reads devices by index)", "[runtime]") {
  plan::Plan p = replicated_plan(4);
  p.devices.resize(1);  // the copies on devices 1..3 have none
  const std::vector<uint8_t> bytes = plan::encode(p);
  CHECK_THROWS_WITH(plan::decode(bytes.data(), bytes.size(), "p.ofp"), Catch::Contains("copies") && Catch::Contains("past the 1 of cluster.devices"));
}

TEST_CASE("plan_copies: a copy whose reference leaves an int32, whose name would go below 0, whose step overflows or that lacks a step is refused", "[runtime]") {
  const plan::Plan p = replicated_plan(2);
  plan::Copies c;
  c.count = 3;
  c.steps = {std::numeric_limits<int32_t>::max(), 0, 0};  // the source's id, device, register
  plan::Task out;
  CHECK(plan::shifted(p.tasks[0], 0, c, out));
  CHECK(plan::shifted(p.tasks[0], 1, c, out));  // 0 + max fits
  CHECK_FALSE(plan::shifted(p.tasks[0], 2, c, out));
  c.steps = {1, 1, 1};
  c.name_step = -1;  // source@0 -> source@-1: not a name a copy has
  CHECK_FALSE(plan::shifted(p.tasks[0], 1, c, out));
  c.name_step = 1;
  CHECK(plan::shifted(p.tasks[0], 1, c, out));
  CHECK(out.name == "source@1");
  c.steps = {1, 1};  // a step short
  CHECK_FALSE(plan::shifted(p.tasks[0], 1, c, out));
  // Steps a file could hold whose product with the copy's index overflows an int64.
  c.steps = {std::numeric_limits<int64_t>::max() / 2, 1, 1};
  CHECK_FALSE(plan::shifted(p.tasks[0], 3, c, out));
  c.steps = {1, 1, 1};
  c.name_step = std::numeric_limits<int64_t>::max();
  CHECK_FALSE(plan::shifted(p.tasks[0], 2, c, out));
  plan::Copies boxes;
  boxes.steps = {};
  boxes.shard_step = {std::numeric_limits<int64_t>::min(), 0};
  CHECK_FALSE(plan::shifted(p.tensors[0], 2, boxes, *std::make_unique<plan::LogicalTensor>()));
}
