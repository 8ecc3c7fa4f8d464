// SPDX-License-Identifier: Apache-2.0
// Two ranks' transports in one process (two UCX workers), on a hand-made plan: a producer on
// rank 0 whose register two tasks on rank 1 read, and its frees back. Checks that bytes land once
// per piece, readies and ends of stream arrive in order, and a hostile message stops the run.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transport/routes.h"
#include "runtime/transport/ucx_transport.h"
#include "runtime/transport/wire.h"

using namespace of;
using namespace of::runtime::transport;

namespace {

// Task 0 (rank 0) writes register 0 (2 slots of `bytes`); tasks 1 and 2 (rank 1) read it.
plan::Plan two_rank_plan(uint64_t bytes) {
  plan::Plan p;
  p.devices = {plan::DeviceRef{.rank = 0}, plan::DeviceRef{.rank = 1}};
  p.tasks.resize(3);
  for (int i = 0; i < 3; ++i) {
    p.tasks[size_t(i)].id = i;
    p.tasks[size_t(i)].device = i == 0 ? 0 : 1;
  }
  p.tasks[0].out_regsts = {0};
  p.tasks[1].in_regsts = {0};
  p.tasks[2].in_regsts = {0};
  p.tasks[1].inputs = p.tasks[2].inputs = {plan::TaskInput{plan::InputKind::regst, 0, 0}};
  plan::Regst r;
  r.id = 0;
  r.producer = 0;
  r.consumers = {1, 2};
  r.slots = 2;
  r.slot_bytes = bytes;
  p.regsts = {r};
  return p;
}

struct Log final : UcxTransport::Receiver {
  std::vector<WireHeader> got;
  std::string failure;
  void deliver(const WireHeader& h) override { got.push_back(h); }
  void failed(const std::string& why) override { failure = why; }
};

struct Pair {
  plan::Plan plan, plan1;  // rank 1's plan: the same, unless a test makes it lie
  RankRoutes r0, r1;
  std::vector<uint8_t> land_bytes;
  std::vector<std::vector<uint8_t*>> land0, land1;
  Log log0, log1;
  UcxTransport t0, t1;

  explicit Pair(uint64_t bytes, plan::Plan lying = {})
      : plan(two_rank_plan(bytes)), plan1(lying.tasks.empty() ? plan : std::move(lying)), r0(plan, 0), r1(plan1, 1), land_bytes(2 * bytes), land0(1), land1{{land_bytes.data(), land_bytes.data() + bytes}},
        t0(r0, land0, log0), t1(r1, land1, log1) {
    t0.connect({t0.address(), t1.address()});
    t1.connect({t0.address(), t1.address()});
  }
  // Progresses both until `done` or a few seconds pass.
  template <typename F>
  bool until(F done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      t0.progress();
      t1.progress();
      if (std::chrono::steady_clock::now() > end) return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("wire: a header round-trips and damage is refused", "[transport]") {
  WireHeader h{.kind = WireKind::ready, .has_data = true, .from_rank = 3, .from_task = 7, .to_task = 9, .regst = 11, .slot = 1, .piece = 1234567890123, .seq = 42};
  uint8_t bytes[kWireHeaderBytes];
  encode(h, bytes);
  std::string why;
  std::optional<WireHeader> back = decode(bytes, sizeof bytes, &why);
  REQUIRE(back);
  CHECK(back->kind == h.kind);
  CHECK(back->has_data);
  CHECK(back->from_task == 7);
  CHECK(back->to_task == 9);
  CHECK(back->piece == h.piece);
  CHECK(back->seq == 42);
  CHECK_FALSE(decode(bytes, sizeof bytes - 1, &why));
  uint8_t bad[kWireHeaderBytes];
  std::memcpy(bad, bytes, sizeof bad);
  bad[0] ^= 1;
  CHECK_FALSE(decode(bad, sizeof bad, &why));
  CHECK(why.find("magic") != std::string::npos);
  std::memcpy(bad, bytes, sizeof bad);
  bad[4] = 9;  // no such kind
  CHECK_FALSE(decode(bad, sizeof bad, &why));
  std::memcpy(bad, bytes, sizeof bad);
  bad[16] = 0xff, bad[17] = 0xff, bad[18] = 0xff, bad[19] = 0xff;  // to_task -1
  CHECK_FALSE(decode(bad, sizeof bad, &why));
  h.kind = WireKind::free;  // a free carries no data
  encode(h, bad);
  CHECK_FALSE(decode(bad, sizeof bad, &why));
}

TEST_CASE("routes: every number of a message is checked against the plan", "[transport]") {
  const plan::Plan p = two_rank_plan(256);
  const RankRoutes r1(p, 1);
  CHECK(r1.landed() == std::vector<plan::RegstId>{0});
  CHECK(r1.local_edges(0).size() == 2);
  const WireHeader ok{.kind = WireKind::ready, .has_data = true, .from_rank = 0, .from_task = 0, .to_task = 1, .regst = 0, .slot = 1, .piece = 0};
  CHECK(r1.check(ok, 256).empty());
  CHECK_FALSE(r1.check(ok, 255).empty());  // not the slot's size
  WireHeader h = ok;
  h.slot = 2;  // the register has 2 slots
  CHECK_FALSE(r1.check(h, 256).empty());
  h = ok;
  h.to_task = 0;  // runs on rank 0
  CHECK_FALSE(r1.check(h, 256).empty());
  h = ok;
  h.from_rank = 1;  // this rank itself
  CHECK_FALSE(r1.check(h, 256).empty());
  h = ok;
  h.from_task = 2;  // not the producer
  CHECK_FALSE(r1.check(h, 256).empty());
  h = ok;
  h.regst = 5;
  CHECK_FALSE(r1.check(h, 256).empty());
  h = ok;
  h.to_task = 99;
  CHECK_FALSE(r1.check(h, 256).empty());
  const RankRoutes r0(p, 0);
  const WireHeader free{.kind = WireKind::free, .from_rank = 1, .from_task = 2, .to_task = 0, .regst = 0, .slot = 0};
  CHECK(r0.check(free, 0).empty());
  CHECK_FALSE(r0.check(free, 8).empty());
  const WireHeader stop{.kind = WireKind::stop, .from_rank = 1};
  CHECK(r0.check(stop, 100).empty());
  CHECK_FALSE(r0.check(stop, kMaxStopTextBytes + 1).empty());
}

TEST_CASE("routes: a register only pacing the readers of a rank sends them no bytes", "[transport]") {
  plan::Plan p = two_rank_plan(256);
  p.tasks[2].inputs.clear();  // task 2 reads no blob of register 0: it only paces it
  CHECK(RankRoutes(p, 0).carries_bytes(RankRoutes(p, 0).edge(2, 0)));  // task 1 on that rank still needs them
  CHECK(RankRoutes(p, 1).lands_bytes(0));
  p.tasks[1].inputs.clear();  // now nobody on rank 1 reads them
  const RankRoutes r0(p, 0), r1(p, 1);
  CHECK_FALSE(r0.carries_bytes(r0.edge(1, 0)));
  CHECK_FALSE(r0.carries_bytes(r0.edge(2, 0)));
  CHECK_FALSE(r1.lands_bytes(0));
  const WireHeader bare{.kind = WireKind::ready, .has_data = false, .from_rank = 0, .from_task = 0, .to_task = 1, .regst = 0, .slot = 1, .piece = 0};
  CHECK(r1.check(bare, 0).empty());
  WireHeader with_bytes = bare;
  with_bytes.has_data = true;
  CHECK(r1.check(with_bytes, 256) == "bytes for register 0 to task 1, which reads none");
}

TEST_CASE("ucx transport: slots land once per piece and messages arrive in order", "[transport]") {
  for (uint64_t bytes : {uint64_t(256), uint64_t(4) << 20}) {  // eager, and large enough for rendezvous
    INFO(bytes);
    Pair pair(bytes);
    std::vector<uint8_t> slot0(bytes, 0x11), slot1(bytes, 0x22);
    pair.t0.ready(0, 1, 0, 0, 0, slot0.data(), bytes);
    pair.t0.ready(0, 2, 0, 0, 0, slot0.data(), bytes);
    pair.t0.ready(0, 1, 0, 1, 1, slot1.data(), bytes);
    pair.t0.ready(0, 2, 0, 1, 1, slot1.data(), bytes);
    pair.t0.eos(0, 1, 0);
    pair.t0.eos(0, 2, 0);
    REQUIRE(pair.until([&] { return pair.log1.got.size() == 6 || !pair.log1.failure.empty(); }));
    REQUIRE(pair.log1.failure.empty());
    // Per consumer: piece 0, piece 1, end of stream.
    for (plan::TaskId c : {1, 2}) {
      std::vector<WireHeader> seen;
      for (const WireHeader& h : pair.log1.got)
        if (h.to_task == c) seen.push_back(h);
      REQUIRE(seen.size() == 3);
      CHECK((seen[0].kind == WireKind::ready && seen[0].piece == 0 && seen[0].slot == 0));
      CHECK((seen[1].kind == WireKind::ready && seen[1].piece == 1 && seen[1].slot == 1));
      CHECK(seen[2].kind == WireKind::eos);
    }
    CHECK(pair.land1[0][0][0] == 0x11);
    CHECK(pair.land1[0][0][bytes - 1] == 0x11);
    CHECK(pair.land1[0][1][bytes - 1] == 0x22);
    // Frees go back to the producer.
    pair.t1.free(1, 0, 0, 0);
    pair.t1.free(2, 0, 0, 0);
    REQUIRE(pair.until([&] { return pair.log0.got.size() == 2; }));
    CHECK(pair.log0.got[0].kind == WireKind::free);
    CHECK(pair.log0.got[1].from_task == 2);
    CHECK(pair.t0.flush(5));
    CHECK(pair.t1.flush(5));
  }
}

TEST_CASE("ucx transport: a stop reaches the other rank with its reason", "[transport]") {
  Pair pair(64);
  pair.t1.stop_all("rank 1: task 2 (x Relu): boom");
  REQUIRE(pair.until([&] { return !pair.log0.failure.empty(); }));
  CHECK(pair.log0.failure == "rank 1: task 2 (x Relu): boom");  // as rank 1 said it
}

TEST_CASE("ucx transport: a message the plan does not allow stops the run", "[transport]") {
  // Rank 1 runs a plan in which task 1 produces register 0 for task 0 on rank 0: what it sends
  // names a producer rank 0's plan does not have.
  plan::Plan lying = two_rank_plan(64);
  lying.regsts[0].producer = 1;
  lying.regsts[0].consumers = {0};
  Pair pair(64, lying);
  std::vector<uint8_t> data(64, 0);
  pair.t1.ready(1, 0, 0, 0, 0, data.data(), 64);
  REQUIRE(pair.until([&] { return !pair.log0.failure.empty(); }));
  CHECK(pair.log0.failure.find("rank 0: refused a message from rank 1") != std::string::npos);
  CHECK(pair.log0.got.empty());
}
