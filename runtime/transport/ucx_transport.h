// SPDX-License-Identifier: Apache-2.0
// The protocol's messages between ranks, over UCX active messages (Debian's libucx: shared
// memory, TCP, CMA; UCX_TLS selects). One worker per rank, one endpoint per other rank. A rank
// that dies is noticed by the bootstrap's sockets, not here (UCX's shared memory cannot tell).
//
// Not thread-safe: one owner (the transport actor, actors/actor_system.cpp) calls everything.
// It never busy-polls: the owner progresses when fd() is readable, then arm()s again.
//
// Sending a ready that carries data sends the producer's slot in place (no copy): the protocol
// keeps the slot unchanged until every consumer freed it, which is after it arrived. A slot goes
// to a rank once per piece, with the first ready for that rank; readies to its other consumers
// there follow without data and are held until it landed. Ready and end of stream are delivered
// in the order sent per (consumer, register), whatever order large receives complete in.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/transport/routes.h"
#include "runtime/transport/wire.h"

namespace of::runtime::transport {

class UcxTransport {
 public:
  // What arrives, delivered from progress() on the owner's thread.
  class Receiver {
   public:
    virtual ~Receiver() = default;
    // A checked ready, free or end of stream for local task h.to_task (data, if any, landed).
    virtual void deliver(const WireHeader& h) = 0;
    // Another rank stopped the run (its reason, as it said it), or the network did: a peer is
    // gone, or sent something this rank refuses ("rank R: ..." naming this rank). The run must
    // stop. Said once.
    virtual void failed(const std::string& why) = 0;
  };

  // `landing[r][s]`: where slot s of register r lands here (one entry per plan register, empty
  // but for routes.landed()). Both outlive the transport.
  UcxTransport(const RankRoutes& routes, const std::vector<std::vector<uint8_t*>>& landing, Receiver& receiver);
  ~UcxTransport();
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  // This worker's address, for the bootstrap to hand to the other ranks.
  std::vector<uint8_t> address() const;
  // Endpoints to every other rank, from every rank's address (index = rank; its own is skipped).
  void connect(const std::vector<std::vector<uint8_t>>& addresses);

  // The protocol's messages to a task on another rank. `slot_data` (ready): the producer's slot,
  // `bytes` long, unchanged until the consumer frees it.
  void ready(plan::TaskId from, plan::TaskId to, plan::RegstId regst, int32_t slot, int64_t piece, const void* slot_data,
             uint64_t bytes);
  void free(plan::TaskId from, plan::TaskId to, plan::RegstId regst, int32_t slot);
  void eos(plan::TaskId from, plan::TaskId to, plan::RegstId regst);
  // Tells every other rank that the run failed, and why (once; best effort: a peer may be gone).
  void stop_all(const std::string& why);

  // Runs UCX's progress until nothing is left to do now; delivers what arrived.
  void progress();
  // Asks for a wakeup on fd() at the next event: false when events are pending (progress again).
  bool arm();
  int fd() const;
  // Blocks (progressing) until every message sent so far has left, at most `seconds`; false on
  // timeout. Local completion only: a peer that already stopped progressing cannot delay it.
  bool flush(double seconds);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace of::runtime::transport
