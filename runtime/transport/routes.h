// SPDX-License-Identifier: Apache-2.0
// One rank's view of a plan's task graph: which rank runs each task, which registers cross to
// this rank from another, and whether a message that arrived from the network names things this
// rank may be told about. Every number in a message is checked here before anything uses it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/transport/wire.h"
#include "schemas/plan_model.h"

namespace of::runtime::transport {

class RankRoutes {
 public:
  RankRoutes(const plan::Plan& p, int32_t rank);

  const plan::Plan& plan() const { return plan_; }
  int32_t rank() const { return rank_; }
  int32_t world() const { return world_; }
  int32_t rank_of(plan::TaskId t) const { return task_rank_[size_t(t)]; }
  bool local(plan::TaskId t) const { return task_rank_[size_t(t)] == rank_; }

  // "" when `h` with a payload of `payload` bytes is a message this rank may get from
  // h.from_rank; else what is wrong with it, in words.
  std::string check(const WireHeader& h, uint64_t payload) const;

  // Ready and end of stream travel in order per (consumer, register): the index of that edge
  // when it crosses ranks (either way), else -1.
  int32_t edge(plan::TaskId consumer, plan::RegstId regst) const;
  size_t edges() const { return edge_index_.size(); }

  // Registers another rank produces that a task of this rank reads: their slots land here.
  const std::vector<plan::RegstId>& landed() const { return landed_; }
  // Whether readies on cross-rank edge `edge` carry the register's bytes to the consumer's rank
  // (the same for every edge of one register into one rank; decided alike on every rank). Not
  // when no reader there reads a blob of it (a task the register only paces, like a weight's
  // Transpose paced by the source, or a snapshot task paced by the lead's source).
  bool carries_bytes(int32_t edge) const { return edge_carries_[size_t(edge)] != 0; }
  // Whether register r's bytes land on this rank (some edge into it carries them).
  bool lands_bytes(plan::RegstId r) const;
  // The edges into this rank's readers of register r (empty unless r lands here).
  const std::vector<int32_t>& local_edges(plan::RegstId r) const { return local_edges_[size_t(r)]; }
  // Register r's slot count, as the plan sizes it.
  int32_t slots(plan::RegstId r) const { return plan_.regsts[size_t(r)].slots; }

 private:
  const plan::Plan& plan_;
  int32_t rank_, world_;
  std::vector<int32_t> task_rank_;
  std::unordered_map<uint64_t, int32_t> edge_index_;
  std::vector<plan::RegstId> landed_;
  std::vector<std::vector<int32_t>> local_edges_;
  std::vector<uint8_t> edge_carries_;  // by edge
};

// The number of ranks a plan's devices name (at least 1).
int32_t plan_ranks(const plan::Plan& p);

}  // namespace of::runtime::transport
