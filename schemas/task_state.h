// SPDX-License-Identifier: Apache-2.0
// The actor protocol of one task, without CAF: slot bookkeeping, when to act, what to tell whom.
// The one implementation of it: the runtime wraps it in a CAF actor (runtime/actors/
// actor_system.cpp), ofc's deadlock check plays it on a plan without memory (compiler/passes/
// check_plan.cpp), tests drive it directly. It lives beside the plan model because both sides
// of the plan use it and neither includes the other's headers.
//
// A task acts on piece n when every input register has piece n ready at the front of its queue
// and every output register's next slot has been freed by all its consumers. After acting it
// sends ready(regst, slot, n) to each consumer of each output and free(regst, slot) to the
// producer of each input. End of stream (eos) follows the last piece on every edge; a task is
// done once it has passed eos on and every slot it lent out has come back.
//
// Persistent registers (weights) have one slot and versions instead of pieces: the producer lends
// version 0 at start and version n+1 after acting on piece n, so it acts on piece n only once
// every reader has freed version n. A reader ends holding the version after its last piece and
// hands it back as it finishes; persistent edges carry no eos.
//
// Micro-batches: a reader reads each version for pieces_per_version (k) pieces (pieces sk..sk+k-1
// read version s) and frees it after the last; an accumulator register gets one piece per k acts
// of its producer, which keeps the slot across them (the kernel sums into it).
//
// Late completion: an action may only start its work in act() (a device stream, a network
// transfer) and end it later. The task takes the act's input and output slots when it acts, so
// it may act again on the next piece at once, but tells consumers (ready) and producers (free)
// only when the act has completed, in act order; its end of stream waits for every act in
// flight. A synchronous act is told as act() returns, from the same bookkeeping.
//
// In-order streams (a GPU's): tasks whose acts run in the order they act, one after another, on
// one stream (the runtime's launcher per GPU) need not wait for each other's completion. A late
// task tells a consumer on its own stream ready, and a producer on its own stream free, as soon
// as it acts: the consumer's work is queued behind the producer's, and a producer's next write
// of a slot behind the reader's read of it. Only edges that leave the stream wait for completion.
// When an act on a stream fails, no act queued behind it on that stream runs or completes (those
// told early would read what it never wrote): the run stops.
#pragma once

#include <cstdint>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

#include "schemas/plan_model.h"

namespace of::protocol {

// Where a late-completing action reports that its oldest act in flight has ended: once per act,
// in act order, from any thread. An act that failed reports failed() instead, and the acts
// queued behind it never complete (the run stops).
class Completion {
 public:
  virtual ~Completion() = default;
  virtual void completed() = 0;
  virtual void failed(const std::string& why) = 0;
};

// What a task does with one piece: `in` and `out` hold the addresses of the blobs it reads and
// writes for this piece (variables and register slots alike); the arrays themselves are reused
// by the next act. Must not allocate or throw.
class Action {
 public:
  virtual ~Action() = default;
  virtual void act(int64_t piece, const void* const* in, void* const* out) = 0;
  // Sources only: asked before emitting `piece`; true ends the stream there (e.g. on SIGINT).
  virtual bool stop_before(int64_t piece) { return false; }
  // True: act() only starts the work, and the action reports the end of each act to the
  // Completion bound before the first act (see the top of this file).
  virtual bool completes_late() const { return false; }
  virtual void bind(Completion*) {}
  // Returns once no act is in flight; called before the memory the acts use goes away.
  virtual void drain() {}
};

// How many acts of task `id` may be in flight at once: as many as its largest register has slots
// (each act in flight holds an output slot or an input slot). A late action sizes its queue by it.
int32_t max_in_flight(const plan::Plan& p, plan::TaskId id, int32_t slot_limit);

// Where the task's messages go (CAF in production, a recorder in tests).
class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void ready(plan::TaskId to, plan::RegstId regst, int32_t slot, int64_t piece) = 0;
  virtual void free(plan::TaskId to, plan::RegstId regst, int32_t slot) = 0;
  virtual void eos(plan::TaskId to, plan::RegstId regst) = 0;
};

struct ActRecord {
  int64_t piece;
  int64_t begin_ns;
  int64_t end_ns;
};

class TaskState {
 public:
  // `slot_limit` caps every register's slot count (ofrun --slots); `pieces` is what a source
  // emits. `trace_capacity` > 0 preallocates that many act records. `arenas` null: the protocol
  // without memory (the deadlock check): the action gets no addresses.
  // `landing` (a multi-process run): per register, where its slots are on this rank when another
  // rank produces it (the transport lands them there); empty entries live in `arenas`.
  // `streams` (null: none): per task, the in-order stream its acts run on, or -1 (see the top).
  // `memory` (null: the default, new and delete): where the state's lists live. ofc's plays build
  // a state for every task of plans of millions, and give them one arena freed at once.
  TaskState(const plan::Plan& p, plan::TaskId id, Action* action, uint8_t* const* arenas, int32_t slot_limit,
            int64_t pieces, int64_t trace_capacity, const std::vector<std::vector<uint8_t*>>* landing = nullptr,
            const std::vector<int32_t>* streams = nullptr, std::pmr::memory_resource* memory = nullptr);

  void start(Outbox& out);  // a source begins emitting; others wait for messages
  void on_ready(plan::RegstId regst, int32_t slot, int64_t piece, Outbox& out);
  void on_free(plan::RegstId regst, int32_t slot, Outbox& out);
  void on_eos(plan::RegstId regst, Outbox& out);
  // The oldest act in flight has completed (a late action's Completion said so).
  void on_completed(Outbox& out);
  bool done() const;

  bool completes_late() const { return late_; }
  void bind(Completion* c) { action_->bind(c); }
  void drain() {
    if (late_) action_->drain();
  }

  plan::TaskId id() const { return id_; }
  std::string_view label() const { return label_; }  // "name op", for error messages
  int64_t acts() const { return acts_; }
  const std::vector<ActRecord>& trace() const { return trace_; }

  // For a task not done, what it waits for: a piece from an input's producer, or a free from the
  // consumer holding its next slot (found with holds()). `on` is -1 when it can name nobody.
  struct Wait {
    plan::TaskId on = -1;
    std::string why;
  };
  Wait waiting_for(const std::vector<const TaskState*>& tasks) const;
  // Whether this task holds (has not freed) slot `slot` of input register `regst`; an act in
  // flight still holds what it reads.
  bool holds(plan::RegstId regst, int32_t slot) const;
  int32_t in_flight() const { return int32_t(flight_count_); }

 private:
  struct Pending {
    int32_t slot;
    int64_t piece;
  };
  struct In {
    plan::RegstId regst;
    plan::TaskId producer;
    std::pmr::vector<uint8_t*> slot_base;
    std::pmr::vector<Pending> ring;  // fixed capacity = slots; FIFO because producers act in order
    size_t head = 0, count = 0;
    bool eos = false;
    bool persistent = false;
    int32_t per_version = 1;  // persistent: pieces read per version
    bool free_at_act = true;  // freed when the task acts: it is synchronous, or its producer is on its stream
  };
  struct Out {
    plan::RegstId regst;
    std::pmr::vector<plan::TaskId> consumers;
    // Told ready when the task acts (all of them for a synchronous task; those on its stream for a
    // late one) / when the act completes (a late task's others).
    std::pmr::vector<plan::TaskId> at_act, at_completion;
    std::pmr::vector<uint8_t*> slot_base;
    std::pmr::vector<int32_t> outstanding;  // consumers that have not freed the slot yet
    int32_t next = 0;
    bool persistent = false;
    int32_t acts_per_piece = 1;
    int32_t group = 0;  // acts so far into the slot `next`
  };
  // A kernel argument: a fixed address (variable) or an offset into an input or output slot.
  struct Arg {
    enum class From : int8_t { fixed, in, out } from;
    int32_t port;  // index into ins_ or outs_
    uint64_t offset;
    uint8_t* fixed;
  };

  // An act that has started and not yet completed: what the task tells once it has.
  struct InFlight {
    int64_t piece = 0;
    int64_t begin_ns = 0;
    std::pmr::vector<int32_t> ready_slot;  // per output: the slot to announce; -1: none (an accumulator mid-group)
    std::pmr::vector<int32_t> free_slot;   // per input: the slot to give back; -1: none (a version read again)
  };

  void try_act(Outbox& out);
  void complete_oldest(Outbox& out);  // a late act's ready and free
  void tell_ready(const Out& o, const std::pmr::vector<plan::TaskId>& to, int32_t slot, int64_t piece, Outbox& out) const;
  uint8_t* address(const Arg& arg) const;
  void maybe_finish(Outbox& out);
  In& in_of(plan::RegstId regst);
  Out& out_of(plan::RegstId regst);
  // An output the task cannot act into: its next slot is still lent out (and no act has begun
  // to fill it, as an accumulator's first act of a group does).
  static bool blocked(const Out& o) { return o.group == 0 && o.outstanding[size_t(o.next)] != 0; }

  plan::TaskId id_;
  std::pmr::string label_;
  // Emits the stream's pieces itself: a source that reads nothing. A rank's source paced by the
  // lead source acts once per piece of it and ends with it, like any other task.
  bool source_;
  Action* action_;
  int64_t pieces_;  // source only
  int64_t emitted_ = 0;
  int64_t acts_ = 0;
  bool eos_sent_ = false;
  std::pmr::vector<In> ins_;
  std::pmr::vector<Out> outs_;
  std::pmr::vector<std::pair<plan::RegstId, int32_t>> in_ports_, out_ports_;  // (register, index into ins_/outs_), sorted
  int32_t empty_ins_ = 0;     // inputs with no piece at the front of their queue
  int32_t blocked_outs_ = 0;  // outputs that are blocked()
  std::pmr::vector<Arg> in_args_, out_args_;
  std::pmr::vector<const void*> in_ptrs_;  // filled per act, sized once
  std::pmr::vector<void*> out_ptrs_;
  std::vector<ActRecord> trace_;
  bool tracing_;
  bool memory_;  // false: no arenas (the deadlock check); act() gets no addresses
  bool late_;
  std::pmr::vector<InFlight> flight_;  // a ring of max_in_flight entries, sized once
  size_t flight_head_ = 0, flight_count_ = 0;
};

// A run in which no task can act any more, as one line: the waits from the first task not done,
// followed until a task repeats (the cycle) or one has finished, each named with what it waits
// for from the next.
// `tasks` are every task of `plan`, by id; null for a task another rank runs.
std::string describe_stall(const plan::Plan& plan, const std::vector<const TaskState*>& tasks);

}  // namespace of::protocol
