// SPDX-License-Identifier: Apache-2.0
// What one rank tells another, as bytes: a fixed 48-byte header (little-endian, a magic number
// first) for each protocol message, and a payload beside it (UCX carries both and says how long
// each is): the register slot's bytes for a ready that carries them, or the reason for a stop. decode() checks the bytes' structure only; whether
// the numbers name a task, register and slot of this rank is RankRoutes::check (routes.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace of::runtime::transport {

enum class WireKind : uint8_t {
  ready = 1,  // register `regst` slot `slot` holds piece `piece` (with the slot's bytes, or not)
  free = 2,   // consumer `from_task` is done with slot `slot` of `regst`
  eos = 3,    // no piece follows on `regst`
  stop = 4,   // the sending rank failed: the payload says why; every rank stops
};

struct WireHeader {
  WireKind kind = WireKind::ready;
  bool has_data = false;  // ready: the slot's bytes follow (the first ready of a slot to a rank)
  int32_t from_rank = 0;
  int32_t from_task = -1;  // ready, eos: the producer; free: the consumer; stop: -1
  int32_t to_task = -1;    // stop: -1
  int32_t regst = -1;
  int32_t slot = 0;
  int64_t piece = 0;
  uint64_t seq = 0;  // ready, eos: per (to_task, regst), from 0: the receiver delivers in this order
};

inline constexpr size_t kWireHeaderBytes = 48;
inline constexpr uint64_t kMaxStopTextBytes = 4096;

void encode(const WireHeader& h, uint8_t out[kWireHeaderBytes]);

// The header in `size` bytes, or nullopt with `why` set (wrong size, magic or kind, flags that
// do not fit the kind, negative numbers).
std::optional<WireHeader> decode(const void* data, size_t size, std::string* why);

}  // namespace of::runtime::transport
