// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <random>

#include "compiler/passes/memory_planner.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

// No two buffers whose lifetimes overlap share a byte; the peak never exceeds the aligned sum.
void check_plan(const std::vector<BufferRequest>& req, const MemoryPlan& plan) {
  uint64_t sum = 0;
  for (const auto& r : req) sum += align_up(r.bytes);
  CHECK(plan.total <= sum);
  for (size_t i = 0; i < req.size(); ++i) {
    CHECK(plan.offsets[i] % kAlignment == 0);
    CHECK(plan.offsets[i] + req[i].bytes <= plan.total);
    for (size_t j = i + 1; j < req.size(); ++j) {
      bool live_together = req[i].first <= req[j].last && req[j].first <= req[i].last;
      bool share_bytes = plan.offsets[i] < plan.offsets[j] + req[j].bytes && plan.offsets[j] < plan.offsets[i] + req[i].bytes;
      if (live_together && req[i].bytes && req[j].bytes) CHECK_FALSE(share_bytes);
    }
  }
}

}  // namespace

TEST_CASE("plan_offsets: buffers with disjoint lifetimes reuse memory", "[compiler]") {
  std::vector<BufferRequest> req = {{1000, 0, 1}, {1000, 2, 3}, {500, 4, 5}};
  MemoryPlan plan = plan_offsets(req);
  check_plan(req, plan);
  CHECK(plan.total == align_up(1000));
  CHECK(plan.offsets[0] == plan.offsets[1]);
}

TEST_CASE("plan_offsets: buffers live together never overlap", "[compiler]") {
  std::vector<BufferRequest> req = {{100, 0, 5}, {200, 0, 5}, {300, 3, 5}};
  MemoryPlan plan = plan_offsets(req);
  check_plan(req, plan);
  CHECK(plan.total == align_up(100) + align_up(200) + align_up(300));
}

TEST_CASE("plan_offsets: random lifetimes, no live overlap, total within the sum", "[compiler]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> req;
    int n = 1 + int(rng() % 40);
    for (int i = 0; i < n; ++i) {
      int64_t first = int64_t(rng() % 20);
      req.push_back({uint64_t(rng() % 5000), first, first + int64_t(rng() % 10)});
    }
    check_plan(req, plan_offsets(req));
  }
}

TEST_CASE("plan_offsets: buffers that all live together are laid out end to end", "[compiler]") {
  std::vector<BufferRequest> req = {{100, 0, 9}, {64, 0, 9}, {1, 0, 9}};
  MemoryPlan plan = plan_offsets(req);
  check_plan(req, plan);
  CHECK(plan.offsets == std::vector<uint64_t>{0, 128, 192});
  CHECK(plan.total == 256);
}
