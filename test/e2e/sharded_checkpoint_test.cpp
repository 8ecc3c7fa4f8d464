// SPDX-License-Identifier: Apache-2.0
// Checkpoints of a plan of several ranks are sharded, one shard per snapshot task (a rank's), with
// a Hugging Face index. A plan that gives a rank two snapshot tasks, or a snapshot task another
// rank's register, is refused; a sharded checkpoint whose index or shards were tampered with is refused at resume
// naming the file, and the run writes nothing over it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <limits>

#include "common/file_util.h"
#include "e2e/e2e_util.h"
#include "schemas/plan_codec.h"

using namespace of::e2e;

namespace {

constexpr const char* kTrain = " --train --loss cross_entropy --optimizer sgd:lr=0.05,momentum=0.9 --micro-batches 4 --devices 2x1:cpu --pp 2";

of::plan::Plan read_plan(const std::string& path) {
  const std::string bytes = slurp(path);
  return of::plan::decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

void write_plan(const TempDir& d, const of::plan::Plan& p) {
  of::write_file_atomic(d / "bad.ofp", of::plan::encode(p));
  std::filesystem::copy_file(d / "pp.safetensors", d / "bad.safetensors", std::filesystem::copy_options::overwrite_existing);
}

// 4 batches of 64 samples (one step of 4 micro-batches), made here.
void write_data(const TempDir& d) {
  std::vector<float> x(256 * 784);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
  std::vector<int64_t> y(256);
  for (size_t i = 0; i < y.size(); ++i) y[i] = int64_t(i % 10);
  of::write_npy(d / "x.npy", of::DType::f32, {256, 784}, x.data());
  of::write_npy(d / "y.npy", of::DType::i64, {256}, y.data());
}

std::string train(const TempDir& d, const std::string& plan, const std::string& extra) {
  return bin("ofrun") + " " + (d / plan) + " --data npy:" + (d / "x.npy") + "," + (d / "y.npy") + " --no-shuffle --checkpoint " +
         (d / "ck") + " " + extra;
}

int32_t snapshot_task(const of::plan::Plan& p, int32_t rank) {
  for (const of::plan::Task& t : p.tasks)
    if (t.kind == of::plan::TaskKind::snapshot && p.devices[size_t(t.device)].rank == rank) return t.id;
  return -1;
}

}  // namespace

TEST_CASE("sharded plans: a rank with two snapshot tasks or a snapshot reading another rank is refused", "[e2e]") {
  TempDir d;
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "pp.ofp") + kTrain, d).exit_code == 0);
  const of::plan::Plan good = read_plan(d / "pp.ofp");
  const int32_t s0 = snapshot_task(good, 0), s1 = snapshot_task(good, 1);
  REQUIRE(s0 >= 0);
  REQUIRE(s1 >= 0);

  of::plan::Plan p = good;
  p.tasks[size_t(s1)].device = p.tasks[size_t(s0)].device;  // both on rank 0
  write_plan(d, p);
  CmdResult r = run_cmd(bin("ofdump") + " " + (d / "bad.ofp"), d);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("tasks[" + std::to_string(s1) + "]") && Catch::Contains("a second snapshot task on rank 0"));

  p = good;
  const of::plan::TaskInput stolen = p.tasks[size_t(s0)].inputs[0];  // a tensor of rank 0's shard
  of::plan::Task& t = p.tasks[size_t(s1)];
  t.inputs.push_back(stolen);
  t.in_regsts.push_back(stolen.id);
  p.regsts[size_t(stolen.id)].consumers.push_back(t.id);
  write_plan(d, p);
  r = run_cmd(bin("ofdump") + " " + (d / "bad.ofp"), d);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("lives on rank 0: a snapshot task reads its own rank's registers"));

  // Ranks are not range-checked where snapshots are counted: a huge or negative one is no index.
  for (const int32_t rank : {std::numeric_limits<int32_t>::max(), -1}) {
    p = good;
    p.devices[size_t(p.tasks[size_t(s1)].device)].rank = rank;
    write_plan(d, p);
    r = run_cmd(bin("ofdump") + " " + (d / "bad.ofp"), d);
    INFO(rank << ": " << r.err);
    CHECK((r.exit_code == 0 || r.exit_code == 1));
  }
}

TEST_CASE("sharded checkpoints: a tampered index or shard is refused at resume naming the file", "[e2e][train]") {
  TempDir d;
  REQUIRE(run_cmd(bin("ofc") + " " + fixture("mlp.onnx") + " -o " + (d / "pp.ofp") + kTrain, d).exit_code == 0);
  write_data(d);
  CmdResult r = run_cmd(train(d, "pp.ofp", "--steps 1"), d);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string step = d / "ck/step-00000001";
  for (const char* f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                        "optimizer-00001-of-00002.safetensors", "optimizer-00002-of-00002.safetensors", "optimizer.safetensors.index.json",
                        "state.json"})
    CHECK(std::filesystem::exists(step + "/" + f));
  CHECK_FALSE(std::filesystem::exists(step + "/model.safetensors"));
  const std::string index = slurp(step + "/model.safetensors.index.json");
  CHECK_THAT(index, Catch::Contains("\"fc1.weight\": \"model-00001-of-00002.safetensors\"") &&
                        Catch::Contains("\"fc3.weight\": \"model-00002-of-00002.safetensors\"") && Catch::Contains("total_size"));

  // A shard truncated behind the state's back: its size no longer matches state.json.
  const std::string shard = step + "/model-00002-of-00002.safetensors";
  const std::string bytes = slurp(shard);
  std::filesystem::copy_file(shard, d / "keep");
  std::filesystem::resize_file(shard, bytes.size() - 8);
  r = run_cmd(train(d, "pp.ofp", "--steps 2 --resume"), d);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains(shard + ": has " + std::to_string(bytes.size() - 8) + " bytes, state.json records"));
  CHECK_FALSE(std::filesystem::exists(d / "ck/step-00000002"));
  std::filesystem::copy_file(d / "keep", shard, std::filesystem::copy_options::overwrite_existing);

  // An index rewritten to put a tensor in the other shard (its CRC made to match is not enough):
  // the state's CRC catches the edit first.
  std::string moved = index;
  const std::string from = "\"fc1.weight\": \"model-00001-of-00002.safetensors\"";
  moved.replace(moved.find(from), from.size(), "\"fc1.weight\": \"model-00002-of-00002.safetensors\"");
  std::ofstream(step + "/model.safetensors.index.json", std::ios::binary) << moved;
  r = run_cmd(train(d, "pp.ofp", "--steps 2 --resume"), d);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("model.safetensors.index.json: checksum mismatch"));

  // Put back, the checkpoint resumes.
  std::ofstream(step + "/model.safetensors.index.json", std::ios::binary) << index;
  r = run_cmd(train(d, "pp.ofp", "--steps 2 --resume"), d);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(d / "ck/step-00000002/model.safetensors.index.json"));
}
