// SPDX-License-Identifier: Apache-2.0
// What arrives from the network, read as a rank reads it: a protocol message (its 48-byte
// header, then the payload's length as a u32 and the payload) decoded and checked against a
// two-rank plan; and the bytes as a bootstrap hello and an address table. Whatever the checks
// let through must name tasks, registers and slots of the plan, with the payload it needs.
#include <cstring>
#include <vector>

#include "runtime/transport/bootstrap.h"
#include "runtime/transport/routes.h"
#include "runtime/transport/wire.h"

using namespace of;
using namespace of::runtime::transport;

namespace {

// Tasks 0 (rank 0) -> register 0 (2 slots of 256 B) -> tasks 1, 2 (rank 1); task 1 -> register
// 1 (persistent, 1 slot of 64 B) -> task 0.
const plan::Plan& fuzz_plan() {
  static const plan::Plan p = [] {
    plan::Plan q;
    q.devices = {plan::DeviceRef{.rank = 0}, plan::DeviceRef{.rank = 1}};
    q.tasks.resize(3);
    for (int i = 0; i < 3; ++i) {
      q.tasks[size_t(i)].id = i;
      q.tasks[size_t(i)].device = i == 0 ? 0 : 1;
    }
    plan::Regst a;
    a.id = 0, a.producer = 0, a.consumers = {1, 2}, a.slots = 2, a.slot_bytes = 256;
    plan::Regst b;
    b.id = 1, b.producer = 1, b.consumers = {0}, b.slots = 1, b.slot_bytes = 64, b.persistent = true;
    q.regsts = {a, b};
    return q;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const RankRoutes routes[2] = {RankRoutes(fuzz_plan(), 0), RankRoutes(fuzz_plan(), 1)};
  if (size >= kWireHeaderBytes + 4) {
    uint32_t payload;
    std::memcpy(&payload, data + kWireHeaderBytes, 4);
    std::string why;
    if (std::optional<WireHeader> h = decode(data, kWireHeaderBytes, &why)) {
      for (const RankRoutes& r : routes) {
        if (!r.check(*h, payload).empty()) continue;
        if (h->kind == WireKind::stop) {
          if (payload > kMaxStopTextBytes) __builtin_trap();
          continue;
        }
        const plan::Plan& p = fuzz_plan();
        if (h->to_task < 0 || h->to_task >= int32_t(p.tasks.size()) || !r.local(h->to_task)) __builtin_trap();
        if (h->regst < 0 || h->regst >= int32_t(p.regsts.size()) || h->slot < 0 || h->slot >= p.regsts[size_t(h->regst)].slots)
          __builtin_trap();
        if (h->kind == WireKind::ready && payload != (h->has_data ? p.regsts[size_t(h->regst)].slot_bytes : 0)) __builtin_trap();
        if (h->kind == WireKind::ready && r.edge(h->to_task, h->regst) < 0) __builtin_trap();
      }
    } else if (why.empty()) {
      __builtin_trap();  // a refusal says why
    }
  }
  const std::vector<uint8_t> bytes(data, data + size);
  if (std::optional<Hello> h = decode_hello(bytes)) {
    if (decode_hello(encode_hello(*h)).has_value() == false) __builtin_trap();  // what it read, it can write back
  }
  for (int32_t world : {1, 2, 5})
    if (auto table = decode_address_table(bytes, world))
      if (int32_t(table->size()) != world) __builtin_trap();
  return 0;
}
