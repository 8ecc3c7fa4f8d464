// SPDX-License-Identifier: Apache-2.0
// Checkpoints saved off the actors' path. save() stages every tensor into a checkpoint image (a
// copy, on the caller's thread, while the caller holds the weights: the snapshot task's act) and
// returns; a thread of the saver's own writes the files, fsyncs them, moves `latest` and prunes
// (CheckpointWriter::save). So the updates of the next steps wait for a memory copy, not for the
// disk. One save is in flight at a time: a save() that comes while the one before is still being
// written waits for it (the disk sets the pace only when saves come faster than it writes them).
// The image is allocated once, at construction: the snapshot's act allocates nothing.
// A write that fails makes failed() true; the next save() or finish() throws its error.
// In a plan of several ranks each snapshot task has its saver, writing its shard of every
// checkpoint; the first shard's saver holds the folder's writer and commits the checkpoint once
// every shard is written (checkpoint.h). A saver destroyed with a commit in flight (the run
// failed) stops waiting for shards that may never come.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/plan_instance.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_dir.h"

namespace of::runtime::train {

class BackgroundSaver {
 public:
  // The saver of checkpoint shard `shard` of `inst` into `dir`; the first shard's needs the
  // folder's writer (`committer`), the others none.
  // `run_failed` (may be null): set when the run fails; a save() waiting for the write before
  // then throws instead of waiting on, and that write stops waiting for other shards.
  BackgroundSaver(std::string dir, CheckpointWriter* committer, const PlanInstance& inst, int32_t shard,
                  const std::atomic<bool>* run_failed = nullptr);
  // Waits for the write in flight (a checkpoint begun is finished, also when the run failed).
  ~BackgroundSaver();
  BackgroundSaver(const BackgroundSaver&) = delete;
  BackgroundSaver& operator=(const BackgroundSaver&) = delete;

  // Waits for the write before, stages the tensors now and queues their write as `state`.
  void save(const CheckpointState& state);
  // Waits for the write in flight and throws of::Error if any write failed. Returns the newest
  // checkpoint folder written ("" when none).
  std::string finish();
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Throws the failed write's error; does nothing if none failed.
  void rethrow();

 private:
  void run();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  std::string dir_;
  CheckpointWriter* committer_;
  CheckpointImage image_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<CheckpointState> queued_;  // staged, not yet written
  bool writing_ = false, quit_ = false;
  std::exception_ptr error_;  // the first failed write's
  std::atomic<bool> failed_{false};
  std::atomic<bool> abandoned_{false};  // set by the destructor: stop waiting for other shards
  const std::atomic<bool>* run_failed_;
  bool abandoned() const { return abandoned_.load() || (run_failed_ && run_failed_->load()); }
  std::string last_;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace of::runtime::train
