// SPDX-License-Identifier: Apache-2.0
#include "schemas/task_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace of::protocol {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::pmr::vector<uint8_t*> slot_bases(const plan::Regst& r, uint8_t* const* arenas, int32_t slots,
                                      const std::vector<std::vector<uint8_t*>>* landing, std::pmr::memory_resource* memory) {
  if (landing && !(*landing)[size_t(r.id)].empty())
    return std::pmr::vector<uint8_t*>((*landing)[size_t(r.id)].begin(), (*landing)[size_t(r.id)].begin() + slots, memory);
  std::pmr::vector<uint8_t*> out(memory);
  out.reserve(size_t(slots));
  for (int32_t s = 0; s < slots; ++s) {
    OF_ASSERT(!arenas || arenas[r.arena], "a register of another rank's arena without landing slots");
    out.push_back(arenas ? arenas[r.arena] + r.offsets[size_t(s)] : nullptr);
  }
  return out;
}

std::pmr::memory_resource* or_default(std::pmr::memory_resource* memory) {
  return memory ? memory : std::pmr::get_default_resource();
}

std::pmr::string label_of(const plan::Task& t, std::pmr::memory_resource* memory) {
  std::pmr::string label(memory);
  label.reserve(t.name.size() + 1 + t.op.size());
  label.append(t.name).append(" ").append(t.op);
  return label;
}

// Up to this many ports a scan is quicker than a binary search (one cache line less).
constexpr size_t kScanPorts = 8;

}  // namespace

int32_t max_in_flight(const plan::Plan& p, plan::TaskId id, int32_t slot_limit) {
  const plan::Task& t = p.tasks[size_t(id)];
  int32_t most = 1;
  for (const auto* regsts : {&t.in_regsts, &t.out_regsts})
    for (plan::RegstId r : *regsts) most = std::max(most, std::min(p.regsts[size_t(r)].slots, slot_limit));
  return most;
}

TaskState::TaskState(const plan::Plan& p, plan::TaskId id, Action* action, uint8_t* const* arenas,
                     int32_t slot_limit, int64_t pieces, int64_t trace_capacity, const std::vector<std::vector<uint8_t*>>* landing,
                     const std::vector<int32_t>* streams, std::pmr::memory_resource* memory)
    : id_(id), label_(label_of(p.tasks[size_t(id)], or_default(memory))),
      source_(p.tasks[size_t(id)].kind == plan::TaskKind::source && p.tasks[size_t(id)].in_regsts.empty()), action_(action), pieces_(pieces),
      ins_(or_default(memory)), outs_(or_default(memory)), in_ports_(or_default(memory)), out_ports_(or_default(memory)),
      in_args_(or_default(memory)), out_args_(or_default(memory)),
      in_ptrs_(or_default(memory)), out_ptrs_(or_default(memory)), tracing_(trace_capacity > 0), memory_(arenas != nullptr),
      late_(action && action->completes_late()), flight_(or_default(memory)) {
  memory = or_default(memory);
  const plan::Task& t = p.tasks[size_t(id)];
  auto slots_of = [&](const plan::Regst& r) { return std::min(r.slots, slot_limit); };
  // Whether task `other`'s acts run in order with this task's, on one stream.
  const int32_t stream = streams ? (*streams)[size_t(id)] : -1;
  auto same_stream = [&](plan::TaskId other) { return stream >= 0 && (*streams)[size_t(other)] == stream; };
  // Sized once: ofc builds a state per task of a plan (millions) for each play of it.
  ins_.reserve(t.in_regsts.size());
  outs_.reserve(t.out_regsts.size());
  in_args_.reserve(t.inputs.size());
  for (plan::RegstId r : t.in_regsts) {
    const plan::Regst& regst = p.regsts[size_t(r)];
    ins_.push_back(In{.regst = r, .producer = regst.producer, .slot_base = slot_bases(regst, arenas, slots_of(regst), landing, memory),
                      .ring = std::pmr::vector<Pending>(size_t(slots_of(regst)), memory), .persistent = regst.persistent,
                      .per_version = t.once_per_version ? 1 : regst.pieces_per_version,
                      .free_at_act = !late_ || same_stream(regst.producer)});
  }
  for (plan::RegstId r : t.out_regsts) {
    const plan::Regst& regst = p.regsts[size_t(r)];
    int32_t slots = slots_of(regst);
    outs_.push_back(Out{.regst = r, .consumers = std::pmr::vector<plan::TaskId>(regst.consumers.begin(), regst.consumers.end(), memory),
                        .at_act = std::pmr::vector<plan::TaskId>(memory), .at_completion = std::pmr::vector<plan::TaskId>(memory),
                        .slot_base = slot_bases(regst, arenas, slots, nullptr, memory),
                        .outstanding = std::pmr::vector<int32_t>(size_t(slots), 0, memory), .persistent = regst.persistent,
                        .acts_per_piece = regst.acts_per_piece, .group = 0});
    for (plan::TaskId c : regst.consumers) (!late_ || same_stream(c) ? outs_.back().at_act : outs_.back().at_completion).push_back(c);
    // Version 0 of a persistent register is lent to its consumers from the outset (start() tells
    // them): were it lent only in start(), an input arriving before the start message could let
    // the task write version 1 over it first, and its consumers would see versions out of order.
    if (regst.persistent) outs_.back().outstanding[0] = int32_t(regst.consumers.size());
  }
  // Messages name registers; a collective's part reads one from every peer (64 on a rank of 64
  // devices), so past a few ports they are found by binary search, and readiness is kept as two
  // counts instead of a scan of every port per message.
  in_ports_.reserve(ins_.size());
  for (size_t k = 0; k < ins_.size(); ++k) in_ports_.emplace_back(ins_[k].regst, int32_t(k));
  std::sort(in_ports_.begin(), in_ports_.end());
  out_ports_.reserve(outs_.size());
  for (size_t k = 0; k < outs_.size(); ++k) out_ports_.emplace_back(outs_[k].regst, int32_t(k));
  std::sort(out_ports_.begin(), out_ports_.end());
  empty_ins_ = int32_t(ins_.size());
  for (const Out& o : outs_) blocked_outs_ += blocked(o) ? 1 : 0;
  for (const plan::TaskInput& in : t.inputs) {
    const uint64_t blob_offset = in.kind == plan::InputKind::variable ? 0 : p.regsts[size_t(in.id)].blobs[size_t(in.blob)].offset;
    switch (in.kind) {
      case plan::InputKind::variable: {
        const plan::Variable& v = p.variables[size_t(in.id)];
        in_args_.push_back(Arg{Arg::From::fixed, -1, 0, arenas ? arenas[v.arena] + v.offset : nullptr});
        break;
      }
      case plan::InputKind::regst: {
        auto port = int32_t(std::find(t.in_regsts.begin(), t.in_regsts.end(), in.id) - t.in_regsts.begin());
        in_args_.push_back(Arg{Arg::From::in, port, blob_offset, nullptr});
        break;
      }
      case plan::InputKind::own: {
        auto port = int32_t(std::find(t.out_regsts.begin(), t.out_regsts.end(), in.id) - t.out_regsts.begin());
        in_args_.push_back(Arg{Arg::From::out, port, blob_offset, nullptr});
        break;
      }
    }
  }
  for (size_t o = 0; o < outs_.size(); ++o)
    for (const plan::Blob& b : p.regsts[size_t(outs_[o].regst)].blobs) out_args_.push_back(Arg{Arg::From::out, int32_t(o), b.offset, nullptr});
  in_ptrs_.resize(in_args_.size());
  out_ptrs_.resize(out_args_.size());
  if (tracing_) trace_.reserve(size_t(trace_capacity));
  const auto flights = size_t(max_in_flight(p, id, slot_limit));
  flight_.reserve(flights);
  for (size_t f = 0; f < flights; ++f)
    flight_.push_back(InFlight{.ready_slot = std::pmr::vector<int32_t>(outs_.size(), -1, memory),
                               .free_slot = std::pmr::vector<int32_t>(ins_.size(), -1, memory)});
}

TaskState::In& TaskState::in_of(plan::RegstId regst) {
  if (ins_.size() <= kScanPorts) {
    for (In& in : ins_)
      if (in.regst == regst) return in;
  }
  const auto at = std::lower_bound(in_ports_.begin(), in_ports_.end(), std::pair<plan::RegstId, int32_t>(regst, -1));
  if (at != in_ports_.end() && at->first == regst) return ins_[size_t(at->second)];
  internal_error(__FILE__, __LINE__, fmt::format("task {} got a message for register {} it does not read", id_, regst));
}

TaskState::Out& TaskState::out_of(plan::RegstId regst) {
  if (outs_.size() <= kScanPorts) {
    for (Out& o : outs_)
      if (o.regst == regst) return o;
  }
  const auto at = std::lower_bound(out_ports_.begin(), out_ports_.end(), std::pair<plan::RegstId, int32_t>(regst, -1));
  if (at != out_ports_.end() && at->first == regst) return outs_[size_t(at->second)];
  internal_error(__FILE__, __LINE__, fmt::format("task {} got a free for register {} it does not write", id_, regst));
}

uint8_t* TaskState::address(const Arg& arg) const {
  switch (arg.from) {
    case Arg::From::fixed: return arg.fixed;
    case Arg::From::in: {
      const In& in = ins_[size_t(arg.port)];
      return in.slot_base[size_t(in.ring[in.head].slot)] + arg.offset;
    }
    case Arg::From::out: {
      const Out& o = outs_[size_t(arg.port)];
      return o.slot_base[size_t(o.next)] + arg.offset;
    }
  }
  return nullptr;
}

void TaskState::start(Outbox& out) {
  // Version 0 of every persistent register exists before anything acts (its slot was lent in the
  // constructor: a task may be told of an input before its own start arrives).
  for (Out& o : outs_) {
    if (!o.persistent) continue;
    for (plan::TaskId c : o.consumers) out.ready(c, o.regst, 0, 0);
  }
  try_act(out);
  maybe_finish(out);
}

void TaskState::on_ready(plan::RegstId regst, int32_t slot, int64_t piece, Outbox& out) {
  In& in = in_of(regst);
  if (in.count >= in.ring.size()) {
    std::string held;
    for (size_t k = 0; k < in.count; ++k) {
      const Pending& h = in.ring[(in.head + k) % in.ring.size()];
      held += fmt::format(" (slot {}, piece {})", h.slot, h.piece);
    }
    internal_error(__FILE__, __LINE__, fmt::format("more ready slots than register {} has: slot {} of piece {} arrived, holding{}; acts {}",
                                                   regst, slot, piece, held, acts_));
  }
  in.ring[(in.head + in.count) % in.ring.size()] = Pending{slot, piece};
  if (in.count++ == 0) --empty_ins_;
  try_act(out);
  maybe_finish(out);
}

void TaskState::on_free(plan::RegstId regst, int32_t slot, Outbox& out) {
  Out& o = out_of(regst);
  OF_ASSERT(o.outstanding[size_t(slot)] > 0, "slot freed more often than it was lent");
  const bool was_blocked = blocked(o);
  --o.outstanding[size_t(slot)];
  if (was_blocked && !blocked(o)) --blocked_outs_;
  try_act(out);
  maybe_finish(out);
}

void TaskState::on_eos(plan::RegstId regst, Outbox& out) {
  In& in = in_of(regst);
  OF_ASSERT(!in.persistent, "eos on a persistent register");
  in.eos = true;
  maybe_finish(out);
}

void TaskState::on_completed(Outbox& out) {
  OF_ASSERT(flight_count_ > 0, "a completion without an act in flight");
  complete_oldest(out);
  try_act(out);
  maybe_finish(out);
}

void TaskState::try_act(Outbox& out) {
  for (;;) {
    if (source_ && emitted_ < pieces_ && action_->stop_before(emitted_)) pieces_ = emitted_;
    if (source_ && emitted_ >= pieces_) return;
    if (flight_count_ == flight_.size()) return;
    if (empty_ins_ > 0 || blocked_outs_ > 0) return;  // an input without a piece, an output without a free slot
    int64_t piece = emitted_;
    for (const In& in : ins_)
      if (!in.persistent) {
        piece = in.ring[in.head].piece;
        break;
      }
    for (const In& in : ins_)
      OF_ASSERT(in.ring[in.head].piece == (in.persistent ? piece / in.per_version : piece), "inputs out of step");

    if (memory_) {
      for (size_t a = 0; a < in_args_.size(); ++a) in_ptrs_[a] = address(in_args_[a]);
      for (size_t a = 0; a < out_args_.size(); ++a) out_ptrs_[a] = address(out_args_[a]);
    }
    // A late act is recorded, to be told when it completes; a synchronous one is told at once.
    InFlight* late = nullptr;
    if (late_) {
      size_t tail = flight_head_ + flight_count_;  // no division on the hot path
      if (tail >= flight_.size()) tail -= flight_.size();
      late = &flight_[tail];
      ++flight_count_;
      late->piece = piece;
    }
    const int64_t begin = tracing_ ? now_ns() : 0;
    action_->act(piece, in_ptrs_.data(), out_ptrs_.data());
    ++acts_;
    if (late) late->begin_ns = begin;
    else if (tracing_ && trace_.size() < trace_.capacity()) trace_.push_back(ActRecord{piece, begin, now_ns()});

    // The act's slots are taken now: downstream first, then the inputs go back.
    for (size_t k = 0; k < outs_.size(); ++k) {
      Out& o = outs_[k];
      if (late) late->ready_slot[k] = -1;
      if (++o.group < o.acts_per_piece) continue;
      o.group = 0;
      const int32_t slot = o.next;
      o.outstanding[size_t(slot)] = int32_t(o.consumers.size());
      o.next = (o.next + 1) % int32_t(o.outstanding.size());
      if (blocked(o)) ++blocked_outs_;  // it was not, or the task would not have acted
      tell_ready(o, o.at_act, slot, piece, out);
      if (late && !o.at_completion.empty()) late->ready_slot[k] = slot;
    }
    for (size_t k = 0; k < ins_.size(); ++k) {
      In& in = ins_[k];
      if (late) late->free_slot[k] = -1;
      if (in.persistent && piece % in.per_version != in.per_version - 1) continue;  // read again by the next piece
      const int32_t slot = in.ring[in.head].slot;
      in.head = (in.head + 1) % in.ring.size();
      if (--in.count == 0) ++empty_ins_;
      if (in.free_at_act) out.free(in.producer, in.regst, slot);
      else late->free_slot[k] = slot;
    }
    if (source_) ++emitted_;
  }
}

void TaskState::tell_ready(const Out& o, const std::pmr::vector<plan::TaskId>& to, int32_t slot, int64_t piece, Outbox& out) const {
  // A persistent register now holds the version read with piece + 1.
  for (plan::TaskId c : to) out.ready(c, o.regst, slot, o.persistent ? piece + 1 : piece / o.acts_per_piece);
}

void TaskState::complete_oldest(Outbox& out) {
  const InFlight& f = flight_[flight_head_];
  if (tracing_ && trace_.size() < trace_.capacity()) trace_.push_back(ActRecord{f.piece, f.begin_ns, now_ns()});
  for (size_t k = 0; k < outs_.size(); ++k)
    if (f.ready_slot[k] >= 0) tell_ready(outs_[k], outs_[k].at_completion, f.ready_slot[k], f.piece, out);
  for (size_t k = 0; k < ins_.size(); ++k)
    if (f.free_slot[k] >= 0) out.free(ins_[k].producer, ins_[k].regst, f.free_slot[k]);
  if (++flight_head_ == flight_.size()) flight_head_ = 0;
  --flight_count_;
}

void TaskState::maybe_finish(Outbox& out) {
  if (eos_sent_ || flight_count_ > 0) return;
  if (source_) {
    if (emitted_ < pieces_) return;
  } else {
    for (const In& in : ins_) {
      if (in.persistent) {
        // The version after the last piece must have arrived, or its producer would lend it to
        // an actor that has quit.
        if (in.count != 1 || in.ring[in.head].piece != acts_ / in.per_version) return;
      } else if (!in.eos || in.count != 0) {
        return;
      }
    }
  }
  eos_sent_ = true;
  for (In& in : ins_) {
    if (!in.persistent) continue;
    out.free(in.producer, in.regst, in.ring[in.head].slot);
    if (in.count > 0) ++empty_ins_;
    in.count = 0;
  }
  for (const Out& o : outs_)
    if (!o.persistent)
      for (plan::TaskId c : o.consumers) out.eos(c, o.regst);
}

bool TaskState::done() const {
  if (!eos_sent_) return false;
  for (const Out& o : outs_)
    for (int32_t n : o.outstanding)
      if (n != 0) return false;
  return true;
}

bool TaskState::holds(plan::RegstId regst, int32_t slot) const {
  for (size_t i = 0; i < ins_.size(); ++i) {
    const In& in = ins_[i];
    if (in.regst != regst) continue;
    for (size_t k = 0; k < in.count; ++k)
      if (in.ring[(in.head + k) % in.ring.size()].slot == slot) return true;
    for (size_t k = 0; k < flight_count_; ++k)
      if (flight_[(flight_head_ + k) % flight_.size()].free_slot[i] == slot) return true;
  }
  return false;
}

TaskState::Wait TaskState::waiting_for(const std::vector<const TaskState*>& tasks) const {
  if (flight_count_ > 0) return {-1, fmt::format("waits for its act on piece {} to complete", flight_[flight_head_].piece)};
  for (const In& in : ins_)
    if (in.count == 0 && !in.eos) return {in.producer, fmt::format("waits for a piece of register {} from", in.regst)};
  for (const Out& o : outs_)
    for (size_t k = 0; k < o.outstanding.size(); ++k) {
      // Before its end of stream the task waits for its next slot; after, for every lent one.
      const size_t slot = eos_sent_ ? k : size_t(o.next);
      if (o.outstanding[slot] == 0) continue;
      for (plan::TaskId c : o.consumers)
        if (!tasks[size_t(c)] || tasks[size_t(c)]->holds(o.regst, int32_t(slot)))  // another rank's: may hold it
          return {c, fmt::format("waits for slot {} of register {} to be freed by", slot, o.regst)};
    }
  return {-1, "waits for nothing it can name (finished its pieces but not its end of stream)"};
}

std::string describe_stall(const plan::Plan& plan, const std::vector<const TaskState*>& tasks) {
  auto label = [&](plan::TaskId t) { return fmt::format("task {} '{}'", t, plan.tasks[size_t(t)].name); };
  plan::TaskId t = -1;
  for (const TaskState* s : tasks)
    if (s && !s->done()) {
      t = s->id();
      break;
    }
  if (t < 0) return "every task is done";
  std::vector<plan::TaskId> path;
  std::vector<std::string> why;
  while (t >= 0 && tasks[size_t(t)] && !tasks[size_t(t)]->done() && std::find(path.begin(), path.end(), t) == path.end()) {
    TaskState::Wait w = tasks[size_t(t)]->waiting_for(tasks);
    path.push_back(t);
    why.push_back(std::move(w.why));
    t = w.on;
  }
  std::string out;
  if (t >= 0 && !tasks[size_t(t)]) {  // the chain leaves this process
    for (size_t i = 0; i < path.size(); ++i) out += fmt::format("{} {} ", label(path[i]), why[i]);
    return out + label(t) + " on another rank";
  }
  const bool finished = t >= 0 && tasks[size_t(t)]->done();
  const auto from = t >= 0 && !finished ? size_t(std::find(path.begin(), path.end(), t) - path.begin()) : 0;
  for (size_t i = from; i < path.size(); ++i) out += fmt::format("{} {} ", label(path[i]), why[i]);
  if (finished) return out + label(t) + ", which has finished (it sends nothing more)";
  if (t < 0) return out.substr(0, out.size() - 1);  // the last task waits on no other task
  return out + label(t);
}

}  // namespace of::protocol
