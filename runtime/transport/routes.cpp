// SPDX-License-Identifier: Apache-2.0
#include "runtime/transport/routes.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace of::runtime::transport {
namespace {

uint64_t edge_key(plan::TaskId consumer, plan::RegstId regst) { return (uint64_t(uint32_t(consumer)) << 32) | uint32_t(regst); }

bool reads(const plan::Regst& r, plan::TaskId t) { return std::find(r.consumers.begin(), r.consumers.end(), t) != r.consumers.end(); }

// Whether task t reads a blob of register r (else r only paces it).
bool reads_blobs(const plan::Task& t, plan::RegstId r) {
  return std::any_of(t.inputs.begin(), t.inputs.end(), [&](const plan::TaskInput& in) { return in.kind == plan::InputKind::regst && in.id == r; });
}

}  // namespace

int32_t plan_ranks(const plan::Plan& p) {
  int32_t ranks = 1;
  for (const plan::DeviceRef& d : p.devices) ranks = std::max(ranks, d.rank + 1);
  return ranks;
}

RankRoutes::RankRoutes(const plan::Plan& p, int32_t rank) : plan_(p), rank_(rank), world_(plan_ranks(p)) {
  for (const plan::Task& t : p.tasks) task_rank_.push_back(p.devices[size_t(t.device)].rank);
  local_edges_.resize(p.regsts.size());
  for (const plan::Regst& r : p.regsts) {
    for (plan::TaskId c : r.consumers) {
      if (rank_of(c) == rank_of(r.producer)) continue;
      const auto e = int32_t(edge_index_.size());
      edge_index_.emplace(edge_key(c, r.id), e);
      if (local(c)) local_edges_[size_t(r.id)].push_back(e);
    }
    if (!local_edges_[size_t(r.id)].empty()) landed_.push_back(r.id);
  }
  // Registers whose bytes some reader on a rank needs, as (register, rank).
  std::set<std::pair<plan::RegstId, int32_t>> needed;
  for (const plan::Regst& r : p.regsts)
    for (plan::TaskId c : r.consumers)
      if (rank_of(c) != rank_of(r.producer) && reads_blobs(p.tasks[size_t(c)], r.id)) needed.insert({r.id, rank_of(c)});
  edge_carries_.assign(edge_index_.size(), 0);
  for (const plan::Regst& r : p.regsts)
    for (plan::TaskId c : r.consumers)
      if (const int32_t e = edge(c, r.id); e >= 0) edge_carries_[size_t(e)] = needed.count({r.id, rank_of(c)}) ? 1 : 0;
}

bool RankRoutes::lands_bytes(plan::RegstId r) const {
  for (int32_t e : local_edges_[size_t(r)])
    if (carries_bytes(e)) return true;
  return false;
}

int32_t RankRoutes::edge(plan::TaskId consumer, plan::RegstId regst) const {
  auto it = edge_index_.find(edge_key(consumer, regst));
  return it == edge_index_.end() ? -1 : it->second;
}

std::string RankRoutes::check(const WireHeader& h, uint64_t payload) const {
  if (h.from_rank >= world_ || h.from_rank == rank_) return fmt::format("from rank {}, not another rank of {}", h.from_rank, world_);
  if (h.kind == WireKind::stop)
    return payload <= kMaxStopTextBytes ? "" : fmt::format("a stop with {} bytes of text (at most {})", payload, kMaxStopTextBytes);
  const auto tasks = int32_t(plan_.tasks.size());
  if (h.from_task >= tasks || h.to_task >= tasks) return fmt::format("task {} or {} beyond the plan's {}", h.from_task, h.to_task, tasks);
  if (!local(h.to_task)) return fmt::format("to task {}, which runs on rank {}", h.to_task, rank_of(h.to_task));
  if (rank_of(h.from_task) != h.from_rank)
    return fmt::format("from task {}, which runs on rank {}, not {}", h.from_task, rank_of(h.from_task), h.from_rank);
  if (h.regst >= int32_t(plan_.regsts.size())) return fmt::format("register {} beyond the plan's {}", h.regst, plan_.regsts.size());
  const plan::Regst& r = plan_.regsts[size_t(h.regst)];
  if (h.slot >= r.slots) return fmt::format("slot {} of register {}, which has {}", h.slot, h.regst, r.slots);
  switch (h.kind) {
    case WireKind::ready:
    case WireKind::eos: {
      if (r.producer != h.from_task || !reads(r, h.to_task))
        return fmt::format("register {} does not go from task {} to task {}", h.regst, h.from_task, h.to_task);
      if (h.kind == WireKind::eos && r.persistent) return fmt::format("end of stream on persistent register {}", h.regst);
      if (h.has_data && !carries_bytes(edge(h.to_task, h.regst)))
        return fmt::format("bytes for register {} to task {}, which reads none", h.regst, h.to_task);
      const uint64_t want = h.has_data ? r.slot_bytes : 0;
      if (payload != want) return fmt::format("{} bytes for register {}, expected {}", payload, h.regst, want);
      return "";
    }
    case WireKind::free:
      if (r.producer != h.to_task || !reads(r, h.from_task))
        return fmt::format("register {} does not go from task {} to task {}", h.regst, h.to_task, h.from_task);
      return payload == 0 ? "" : fmt::format("a free with {} bytes", payload);
    case WireKind::stop: break;
  }
  return "unknown kind";
}

}  // namespace of::runtime::transport
