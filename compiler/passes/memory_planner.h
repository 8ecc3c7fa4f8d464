// SPDX-License-Identifier: Apache-2.0
// Offsets in one arena for buffers with lifetimes: buffers whose lifetimes overlap never overlap
// in memory; a buffer whose lifetime has ended gives its bytes to later ones.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace of::compiler {

struct BufferRequest {
  uint64_t bytes = 0;
  int64_t first = 0;  // first and last time step it is live, inclusive
  int64_t last = 0;
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per request, aligned to kAlignment
  uint64_t total = 0;             // arena size (peak), never above the aligned sum of sizes
};

MemoryPlan plan_offsets(const std::vector<BufferRequest>& requests);

// The same best fit for any rule of which buffers are live together (a share group's order,
// share_memory.cpp): largest first, each at the lowest offset clear of those placed.
MemoryPlan place_best_fit(const std::vector<uint64_t>& bytes, const std::function<bool(size_t, size_t)>& live_together);

}  // namespace of::compiler
