// SPDX-License-Identifier: Apache-2.0
#include "runtime/actors/late_action.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/error.h"

namespace of::runtime {

LatePool::LatePool(int threads, bool jitter, bool in_order) : jitter_(jitter), in_order_(in_order) {
  OF_ASSERT(!in_order || threads == 1, "an in-order pool is one thread");
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { work(); });
}

LatePool::~LatePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void LatePool::post(LateAction* action) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.push_back(action);
  }
  wake_.notify_one();
}

void LatePool::work() {
  for (;;) {
    LateAction* next = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stopping, and nothing is left to run
      next = ready_.front();
      ready_.pop_front();
    }
    next->run_queued(jitter_, in_order_);
  }
}

LateAction::LateAction(std::unique_ptr<Action> inner, std::shared_ptr<LatePool> pool, const plan::Plan& p, plan::TaskId id,
                       int32_t slot_limit)
    // One more entry than acts in flight: an inner action that completes late itself may report
    // an act's end before this queue has popped it, and the task may then act again at once.
    : inner_(std::move(inner)), pool_(std::move(pool)), queue_(size_t(protocol::max_in_flight(p, id, slot_limit)) + 1),
      rng_(uint64_t(id) * 0x9E3779B97F4A7C15ull + 1) {
  const plan::Task& t = p.tasks[size_t(id)];
  size_t outs = 0;
  for (plan::RegstId r : t.out_regsts) outs += p.regsts[size_t(r)].blobs.size();
  for (Queued& q : queue_) {
    q.in.resize(t.inputs.size());
    q.out.resize(outs);
  }
}

LateAction::~LateAction() { drain(); }

void LateAction::act(int64_t piece, const void* const* in, void* const* out) {
  OF_ASSERT(done_ != nullptr, "a late action acts before it is bound to its task's completion");
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    OF_ASSERT(count_ < queue_.size(), "more acts in flight than the task may have");
    Queued& q = queue_[(head_ + count_) % queue_.size()];
    q.piece = piece;
    std::copy(in, in + q.in.size(), q.in.begin());
    std::copy(out, out + q.out.size(), q.out.begin());
    ++count_;
    if (int32_t(count_) > most_.load(std::memory_order_relaxed)) most_.store(int32_t(count_), std::memory_order_relaxed);
    start = !running_ || pool_->in_order();  // in order: one post per act, run one by one
    running_ = true;
  }
  if (start) pool_->post(this);
}

void LateAction::run_queued(bool jitter, bool one) {
  for (;;) {
    Queued* q = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (count_ == 0) {
        running_ = false;
        idle_.notify_all();
        return;
      }
      q = &queue_[head_];
    }
    if (jitter) {  // 0 to 63 µs, so that tasks finish in other orders than they started
      rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;
      std::this_thread::sleep_for(std::chrono::microseconds(rng_ % 64));
    }
    // The entry stays put until popped: act() only writes behind the queued ones.
    std::string error;
    bool threw = false;
    if (!failed_ && !pool_->stream_failed()) {
      try {
        inner_->act(q->piece, q->in.data(), q->out.data());
      } catch (const std::exception& e) {
        error = e.what();
        threw = failed_ = true;
        pool_->set_stream_failed();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      head_ = (head_ + 1) % queue_.size();
      --count_;
    }
    if (threw) done_->failed(error);
    else if (!failed_ && !pool_->stream_failed() && !inner_->completes_late()) done_->completed();  // else the inner action reports
    if (one) {  // the next act has a post of its own
      std::lock_guard<std::mutex> lock(mutex_);
      if (count_ == 0) {
        running_ = false;
        idle_.notify_all();
      }
      return;
    }
  }
}

void LateAction::drain() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return !running_; });
  }
  inner_->drain();  // a GPU's: what the stream still has of its acts
}

}  // namespace of::runtime
