// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/background_save.h"

#include "common/error.h"

namespace of::runtime::train {

BackgroundSaver::BackgroundSaver(std::string dir, CheckpointWriter* committer, const PlanInstance& inst, int32_t shard,
                                 const std::atomic<bool>* run_failed)
    : dir_(std::move(dir)), committer_(committer), image_(inst, shard), run_failed_(run_failed), thread_([this] { run(); }) {
  OF_ASSERT((shard == 0) == (committer != nullptr), "the first shard's saver, and only it, commits");
}

BackgroundSaver::~BackgroundSaver() {
  abandoned_.store(true);
  {
    std::unique_lock lock(mutex_);
    wait_idle(lock);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundSaver::wait_idle(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return !queued_ && !writing_; });
}

void BackgroundSaver::save(const CheckpointState& state) {
  {
    std::unique_lock lock(mutex_);
    wait_idle(lock);
    if (error_) std::rethrow_exception(error_);
    image_.stage();  // the writer thread is idle: the image is the caller's alone
    queued_ = state;
  }
  cv_.notify_all();
}

std::string BackgroundSaver::finish() {
  std::unique_lock lock(mutex_);
  wait_idle(lock);
  if (error_) std::rethrow_exception(error_);
  return last_;
}

void BackgroundSaver::rethrow() {
  if (!failed()) return;
  std::lock_guard lock(mutex_);
  std::rethrow_exception(error_);
}

void BackgroundSaver::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return queued_ || quit_; });
    if (!queued_) return;
    const CheckpointState state = *queued_;
    queued_.reset();
    writing_ = true;
    lock.unlock();
    std::string folder;
    std::exception_ptr error;
    try {
      if (committer_) {
        folder = committer_->save(image_, state, [this] { return abandoned(); });
      } else {
        write_checkpoint_shard(dir_, image_, state, [this] { return abandoned(); });
      }
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    writing_ = false;
    if (!error) {
      last_ = folder;
    } else if (!error_) {
      error_ = error;
      failed_.store(true, std::memory_order_relaxed);
    }
    cv_.notify_all();
  }
}

}  // namespace of::runtime::train
