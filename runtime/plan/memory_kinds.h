// SPDX-License-Identifier: Apache-2.0
// What an arena's bytes hold, by kind, for people (ofdump --memory, --json): weights (constants
// and the state_dict tensors of persistent registers), optimizer state (the rest of the
// persistent state), data (the source's register and its copies), boxing (what boxing and
// transfer tasks write) and activations (every other streamed register: forward outputs,
// gradients). A kind's bytes are the union of the byte ranges its blobs occupy in the arena, so
// bytes that registers of several kinds share in turn (a share group) count for each of them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "schemas/plan_model.h"

namespace of::runtime {

enum class MemoryKind { weights, optimizer, data, boxing, activations };
inline constexpr std::array<const char*, 5> kMemoryKindNames{"weights", "optimizer state", "data", "boxing", "activations"};

struct ArenaItem {
  uint64_t bytes = 0;   // slots x slot bytes (a register) or the tensor's bytes (a weight)
  std::string what;     // "'fc1.weight'", "the output of '/fc1/Gemm' 2 x 256 KiB"
  MemoryKind kind = MemoryKind::activations;
};

struct ArenaKinds {
  std::array<uint64_t, 5> bytes{};  // per MemoryKind
  std::vector<ArenaItem> largest;   // the three largest items, largest first
};

// One entry per arena of the plan (by arena id).
std::vector<ArenaKinds> memory_by_kind(const plan::Plan& p);

}  // namespace of::runtime
