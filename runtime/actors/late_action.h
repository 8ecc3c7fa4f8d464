// SPDX-License-Identifier: Apache-2.0
// A CPU test device whose acts complete late: the wrapped action runs on a small thread pool
// after act() has returned, each task's acts one after another in order (as on a device's
// stream), and the end of each is reported to the task's Completion. It exercises the protocol's
// late completion (ready and free only once an act has ended, in order; several acts in flight)
// without a GPU: a run with it must give what the synchronous run gives, bit for bit
// (ofrun --late-completion). A small random pause before each act shuffles the interleaving.
//
// It is also how a GPU's acts reach its stream (runtime/gpu/): one thread per GPU runs the
// queued acts of every task on that GPU, each of which only enqueues its work on the stream; such
// an inner action completes late itself (a host callback once the stream reaches the act), so
// the pool thread never waits for the device.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/actors/protocol.h"

namespace of::runtime {

class LateAction;

// The device's threads. Each runs one action's queued acts until it is empty, then the next
// action that has work. An in-order pool (a stream: one thread) runs every act in the order the
// tasks acted, across actions, which lets tasks on it tell each other at once (the protocol's
// in-order streams, schemas/task_state.h).
class LatePool {
 public:
  // `jitter`: pause 0 to 63 µs before each act (the test device); a GPU's launcher runs without.
  explicit LatePool(int threads, bool jitter = true, bool in_order = false);
  ~LatePool();
  LatePool(const LatePool&) = delete;
  LatePool& operator=(const LatePool&) = delete;
  // `action` has acts queued and no thread running them; in order: once per act.
  void post(LateAction* action);
  bool in_order() const { return in_order_; }
  // In order: an act failed, so every act after it on this pool is dropped unrun and uncompleted
  // (tasks on the stream were told of it as it was queued: what they would run on is garbage).
  // Only the pool's thread reads and writes it.
  bool stream_failed() const { return stream_failed_; }
  void set_stream_failed() { stream_failed_ = in_order_; }

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<LateAction*> ready_;
  bool stopping_ = false;
  bool jitter_, in_order_;
  bool stream_failed_ = false;
  std::vector<std::thread> threads_;
};

class LateAction final : public Action {
 public:
  // Wraps the action of task `id` of `p`; `slot_limit` as the task's TaskState has it (its queue
  // holds protocol::max_in_flight acts, and one more). An inner action that completes late itself (a GPU's:
  // its act only enqueues) is bound to the task's Completion and reports each act's end; a
  // synchronous one's acts end when they return on the pool thread.
  LateAction(std::unique_ptr<Action> inner, std::shared_ptr<LatePool> pool, const plan::Plan& p, plan::TaskId id, int32_t slot_limit);
  ~LateAction() override;

  void act(int64_t piece, const void* const* in, void* const* out) override;
  bool completes_late() const override { return true; }
  void bind(Completion* done) override {
    done_ = done;
    inner_->bind(done);
  }
  void drain() override;
  // The most acts that were queued at once (a test's proof that acts overlapped).
  int32_t most_in_flight() const { return most_.load(std::memory_order_relaxed); }

 private:
  friend class LatePool;
  struct Queued {
    int64_t piece = 0;
    std::vector<const void*> in;  // the act's addresses, copied (the task reuses its arrays); sized once
    std::vector<void*> out;
  };
  // On a pool thread: the queued acts, in order, until none is left (or only the oldest: `one`).
  void run_queued(bool jitter, bool one);

  std::unique_ptr<Action> inner_;
  std::shared_ptr<LatePool> pool_;
  Completion* done_ = nullptr;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<Queued> queue_;  // a ring of `capacity` acts
  size_t head_ = 0, count_ = 0;
  bool running_ = false;  // a pool thread owns this action's queue
  bool failed_ = false;   // an act threw: the ones behind it are dropped
  uint64_t rng_;  // the pauses' xorshift state
  std::atomic<int32_t> most_{0};
};

}  // namespace of::runtime
