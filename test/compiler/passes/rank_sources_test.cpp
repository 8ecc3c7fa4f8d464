// SPDX-License-Identifier: Apache-2.0
// A plan of several ranks reads its data on every rank that consumes it (parallelize's
// input_home, lower_to_tasks' sources): data-parallel ranks each read their own rows, so no batch
// crosses ranks; ranks that all read an input whole (tensor parallelism) each read it whole; a
// pipeline stage's rank reads only the inputs its stage consumes; data-parallel devices of one
// rank read their own rows too. The lead source (task 0, on device 0) reads nothing; every other
// source is paced by one register.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "compiler/compile.h"
#include "test/compiler/fixture_mlp.h"

using namespace of::compiler;

namespace {

Compilation compile_mlp(int32_t ranks, int32_t dp, int32_t tp, int32_t pp) { return compile_fixture_mlp("sgd", ranks, dp, tp, pp); }

struct SourceBox {
  int32_t rank;
  int64_t row, rows;  // the box of the input, in rows of the whole
};

// Per graph input: the box each source holds of it.
std::map<std::string, std::vector<SourceBox>> source_boxes(const Compilation& c) {
  std::map<std::string, std::vector<SourceBox>> out;
  const TaskGraph& tg = c.tasks;
  for (const Task& t : tg.tasks) {
    if (t.kind != TaskKind::source) continue;
    const Regst& r = tg.regsts[size_t(t.out_regsts[0])];
    for (size_t k = 0; k < r.blobs.size(); ++k) {
      const Value& v = c.graph.values[size_t(r.blobs[k].tensor)];
      const int64_t row = v.shard_begin.empty() ? 0 : v.shard_begin[0];
      out[t.io_names[k]].push_back(SourceBox{tg.devices[size_t(t.device)].rank, row, v.desc.shape.empty() ? 1 : v.desc.shape[0]});
    }
  }
  return out;
}

// Bytes of graph input `name` that boxing moves between devices, per piece.
uint64_t moved(const Compilation& c, const std::string& name) {
  uint64_t n = 0;
  for (const auto& b : c.parallel.boxings)
    if (b.tensor == name) n += b.bytes;
  return n;
}

// Whether a task that carries bytes of graph input `name` (boxing names its tasks after the
// tensor) reads them from another rank.
bool crosses_ranks(const Compilation& c, const std::string& name) {
  const TaskGraph& tg = c.tasks;
  auto rank_of_regst = [&](RegstId r) { return tg.devices[size_t(tg.arenas[size_t(tg.regsts[size_t(r)].arena)].device)].rank; };
  for (const Task& t : tg.tasks) {
    if (t.name.rfind(name + "/", 0) != 0 || t.out_regsts.empty() || tg.regsts[size_t(t.out_regsts[0])].blobs.empty()) continue;
    for (RegstId r : t.in_regsts)
      if (rank_of_regst(r) != tg.devices[size_t(t.device)].rank) return true;
  }
  return false;
}

void check_sources(const Compilation& c) {
  const TaskGraph& tg = c.tasks;
  size_t leads = 0;
  for (const Task& t : tg.tasks) {
    if (t.kind != TaskKind::source) continue;
    CHECK(t.inputs.empty());
    if (t.in_regsts.empty()) {
      ++leads;
      CHECK(t.id == 0);
      CHECK(t.device == 0);
    } else {
      CHECK(t.in_regsts.size() == 1);
    }
  }
  CHECK(leads == 1);
}

}  // namespace

TEST_CASE("rank sources: data-parallel ranks each read their own rows and ship no batch", "[compiler]") {
  const Compilation c = compile_mlp(2, 2, 1, 1);
  check_sources(c);
  const auto boxes = source_boxes(c);
  for (const char* name : {"input", "label"}) {
    const std::vector<SourceBox>& b = boxes.at(name);
    REQUIRE(b.size() == 2);
    CHECK(b[0].rank == 0);
    CHECK(b[0].row == 0);
    CHECK(b[0].rows == 32);
    CHECK(b[1].rank == 1);
    CHECK(b[1].row == 32);
    CHECK(b[1].rows == 32);
    CHECK(moved(c, name) == 0);
    CHECK_FALSE(crosses_ranks(c, name));
  }
  // The step's scalars are whole on both ranks.
  REQUIRE(boxes.at("train/lr").size() == 2);
  CHECK(moved(c, "train/lr") == 0);
}

TEST_CASE("rank sources: four data-parallel devices on two ranks read half the batch per rank", "[compiler]") {
  const Compilation c = compile_mlp(2, 4, 1, 1);
  check_sources(c);
  const auto boxes = source_boxes(c);
  const std::vector<SourceBox>& b = boxes.at("input");
  REQUIRE(b.size() == 2);
  CHECK(b[0].rows == 32);
  CHECK(b[1].row == 32);
  // Each device's quarter comes from its rank's half: nothing crosses ranks.
  CHECK_FALSE(crosses_ranks(c, "input"));
  CHECK_FALSE(crosses_ranks(c, "label"));
}

TEST_CASE("rank sources: tensor-parallel ranks each read the whole batch", "[compiler]") {
  const Compilation c = compile_mlp(2, 1, 2, 1);
  check_sources(c);
  const auto boxes = source_boxes(c);
  const std::vector<SourceBox>& b = boxes.at("input");
  REQUIRE(b.size() == 2);
  for (const SourceBox& x : b) {
    CHECK(x.row == 0);
    CHECK(x.rows == 64);
  }
  CHECK(moved(c, "input") == 0);
}

TEST_CASE("rank sources: a pipeline stage's rank reads only what its stage consumes", "[compiler]") {
  const Compilation c = compile_mlp(2, 1, 1, 2);
  check_sources(c);
  const auto boxes = source_boxes(c);
  // The first stage (rank 0) reads the features, the last (rank 1) the labels.
  REQUIRE(boxes.at("input").size() == 1);
  CHECK(boxes.at("input")[0].rank == 0);
  REQUIRE(boxes.at("label").size() == 1);
  CHECK(boxes.at("label")[0].rank == 1);
  CHECK(moved(c, "label") == 0);
}

TEST_CASE("rank sources: data-parallel devices of one rank each read their own rows", "[compiler]") {
  const Compilation c = compile_mlp(1, 4, 1, 1);
  check_sources(c);
  const auto boxes = source_boxes(c);
  for (const char* name : {"input", "label"}) {
    const std::vector<SourceBox>& b = boxes.at(name);
    REQUIRE(b.size() == 4);
    for (int64_t k = 0; k < 4; ++k) {
      CHECK(b[size_t(k)].row == 16 * k);
      CHECK(b[size_t(k)].rows == 16);
    }
    CHECK(moved(c, name) == 0);  // no device slices and copies the batch for the others
  }
  // The step's scalars: each device's source reads them whole.
  CHECK(boxes.at("train/lr").size() == 4);
  CHECK(moved(c, "train/lr") == 0);
}

TEST_CASE("rank sources: a tensor-parallel plan of one rank keeps one source", "[compiler]") {
  for (const auto& [dp, tp] : {std::pair{1, 2}, std::pair{2, 2}}) {
    const Compilation c = compile_mlp(1, dp, tp, 1);
    check_sources(c);
    size_t sources = 0;
    for (const Task& t : c.tasks.tasks) sources += t.kind == TaskKind::source;
    CHECK(sources == 1);
  }
}
