// SPDX-License-Identifier: Apache-2.0
// Each rank checkpoints what it holds (lower_to_tasks): one snapshot task per rank that holds
// any, reading its own rank's registers only; a tensor written by the lowest rank holding a box
// of it, and a box the writer lacks read by the lowest rank holding it (handed over at saves).
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "compiler/compile.h"
#include "test/compiler/fixture_mlp.h"

using namespace of::compiler;

namespace {

Compilation compile_mlp(int32_t dp, int32_t tp, int32_t pp) { return compile_fixture_mlp("sgd:momentum=0.9", dp * tp * pp, dp, tp, pp); }

struct Snapshot {
  int32_t rank;
  std::set<int32_t> read_ranks;  // ranks whose persistent registers it reads blobs of
  std::set<std::string> tensors;
};

std::vector<Snapshot> snapshots(const Compilation& c) {
  const TaskGraph& tg = c.tasks;
  auto rank_of_regst = [&](RegstId r) { return tg.devices[size_t(tg.arenas[size_t(tg.regsts[size_t(r)].arena)].device)].rank; };
  std::vector<Snapshot> out;
  for (const Task& t : tg.tasks) {
    if (t.kind != TaskKind::snapshot) continue;
    Snapshot s{tg.devices[size_t(t.device)].rank, {}, {}};
    for (const TaskInput& in : t.inputs) {
      s.read_ranks.insert(rank_of_regst(in.id));
      s.tensors.insert(c.graph.values[size_t(tg.regsts[size_t(in.id)].blobs[size_t(in.blob)].tensor)].name);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_CASE("rank snapshots: a pipeline's ranks each checkpoint their own stage and read no other rank", "[compiler]") {
  const std::vector<Snapshot> s = snapshots(compile_mlp(1, 1, 2));
  REQUIRE(s.size() == 2);
  CHECK(s[0].rank == 0);
  CHECK(s[1].rank == 1);
  CHECK(s[0].read_ranks == std::set<int32_t>{0});
  CHECK(s[1].read_ranks == std::set<int32_t>{1});
  CHECK(s[0].tensors.count("fc1.weight") == 1);
  CHECK(s[1].tensors.count("fc3.weight") == 1);
  for (const std::string& name : s[0].tensors) CHECK(s[1].tensors.count(name) == 0);
}

TEST_CASE("rank snapshots: data-parallel replicas are checkpointed once by rank 0 and never cross", "[compiler]") {
  const std::vector<Snapshot> s = snapshots(compile_mlp(2, 1, 1));
  REQUIRE(s.size() == 1);
  CHECK(s[0].rank == 0);
  CHECK(s[0].read_ranks == std::set<int32_t>{0});
  CHECK(s[0].tensors.count("fc1.weight.momentum_buffer") + s[0].tensors.count("fc1.weight") >= 1);
}

TEST_CASE("rank snapshots: a tensor split over ranks is written by its lowest rank and each rank reads only its own boxes", "[compiler]") {
  const Compilation c = compile_mlp(1, 2, 1);
  const std::vector<Snapshot> s = snapshots(c);
  REQUIRE(s.size() == 2);
  CHECK(s[0].read_ranks == std::set<int32_t>{0});
  CHECK(s[1].read_ranks == std::set<int32_t>{1});
  // Rank 1 reads its boxes of tensors split over ranks, each one rank 0 lacks, and no replica.
  const TaskGraph& tg = c.tasks;
  int split = 0;
  for (const Task& t : tg.tasks) {
    if (t.kind != TaskKind::snapshot || tg.devices[size_t(t.device)].rank != 1) continue;
    for (const TaskInput& in : t.inputs) {
      const Value& v = c.graph.values[size_t(tg.regsts[size_t(in.id)].blobs[size_t(in.blob)].tensor)];
      INFO(v.name);
      REQUIRE(v.logical >= 0);
      const bool is_split = v.desc.shape != c.logical.values[size_t(v.logical)].desc.shape;
      split += is_split ? 1 : 0;
      // A whole tensor on rank 1 is one rank 0 holds no box of (rank 1 writes it).
      if (!is_split) CHECK(s[0].tensors.count(v.name) == 0);
    }
  }
  CHECK(split > 0);
  CHECK(s[0].tensors.count("fc1.weight") == 1);
  CHECK(s[1].tensors.count("fc1.weight") == 1);  // rank 1's box of it, handed to rank 0 at each save
}
