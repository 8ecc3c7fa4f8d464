// SPDX-License-Identifier: Apache-2.0
#include "runtime/transport/wire.h"

#include <cstring>

#include <fmt/format.h>

namespace of::runtime::transport {
namespace {

constexpr uint32_t kMagic = 0x3177666f;  // "ofw1"

// Little-endian on the wire; the machines we run on are little-endian, so these are copies.
template <typename T>
void put(uint8_t* at, T v) {
  std::memcpy(at, &v, sizeof v);
}
template <typename T>
T get(const uint8_t* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

}  // namespace

// Layout: magic u32 | kind u8 | flags u8 | 2 zero bytes | from_rank i32 | from_task i32 |
// to_task i32 | regst i32 | slot i32 | 4 zero bytes | piece i64 | seq u64: 48 bytes.
void encode(const WireHeader& h, uint8_t out[kWireHeaderBytes]) {
  std::memset(out, 0, kWireHeaderBytes);
  put<uint32_t>(out + 0, kMagic);
  out[4] = uint8_t(h.kind);
  out[5] = h.has_data ? 1 : 0;
  put<int32_t>(out + 8, h.from_rank);
  put<int32_t>(out + 12, h.from_task);
  put<int32_t>(out + 16, h.to_task);
  put<int32_t>(out + 20, h.regst);
  put<int32_t>(out + 24, h.slot);
  put<int64_t>(out + 32, h.piece);
  put<uint64_t>(out + 40, h.seq);
}

std::optional<WireHeader> decode(const void* data, size_t size, std::string* why) {
  auto bad = [&](std::string reason) -> std::optional<WireHeader> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (size != kWireHeaderBytes) return bad(fmt::format("header of {} bytes, expected {}", size, kWireHeaderBytes));
  const auto* p = static_cast<const uint8_t*>(data);
  if (get<uint32_t>(p) != kMagic) return bad("not an of message (bad magic)");
  if (p[6] != 0 || p[7] != 0 || get<uint32_t>(p + 28) != 0) return bad("reserved bytes are not zero");
  WireHeader h;
  const uint8_t kind = p[4];
  if (kind < uint8_t(WireKind::ready) || kind > uint8_t(WireKind::stop)) return bad(fmt::format("unknown kind {}", kind));
  h.kind = WireKind(kind);
  if (p[5] > 1 || (p[5] == 1 && h.kind != WireKind::ready)) return bad(fmt::format("flags {} do not fit kind {}", p[5], kind));
  h.has_data = p[5] == 1;
  h.from_rank = get<int32_t>(p + 8);
  h.from_task = get<int32_t>(p + 12);
  h.to_task = get<int32_t>(p + 16);
  h.regst = get<int32_t>(p + 20);
  h.slot = get<int32_t>(p + 24);
  h.piece = get<int64_t>(p + 32);
  h.seq = get<uint64_t>(p + 40);
  if (h.from_rank < 0) return bad("negative rank");
  if (h.kind == WireKind::stop) {
    if (h.from_task != -1 || h.to_task != -1 || h.regst != -1 || h.slot != 0 || h.piece != 0 || h.seq != 0)
      return bad("a stop names no task, register or slot");
    return h;
  }
  if (h.from_task < 0 || h.to_task < 0 || h.regst < 0 || h.slot < 0 || h.piece < 0) return bad("negative task, register, slot or piece");
  return h;
}

}  // namespace of::runtime::transport
