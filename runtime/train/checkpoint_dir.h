// SPDX-License-Identifier: Apache-2.0
// A checkpoint folder that one training run writes at a time.
//
// The writer holds an advisory lock (flock on DIR/.lock, which names its pid) for the whole run:
// a second run into the same folder is refused in one line naming the holder; a lock left by a
// killed run is released by the kernel and simply taken. Under the lock the writer removes what
// killed saves left (".partial-*" folders, "*.tmp.*" files), refuses to start a fresh run over
// checkpoints unless told to start over, and prunes: it keeps the newest `keep` checkpoints of its
// line (its own saves, after those of the run it resumed, up to the one it resumed from) and
// removes every other step folder.
// Readers (--eval, --resume's load, --init) take no lock: a save never removes the checkpoint
// `latest` named before it, so a reader that has just read `latest` still finds its folder.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "runtime/plan_instance.h"
#include "runtime/train/checkpoint.h"

namespace of::runtime::train {

class CheckpointWriter {
 public:
  // Creates DIR if needed and takes its lock. `resume`: this run continues DIR's latest
  // checkpoint; `overwrite`: it starts over, replacing DIR's checkpoints at its first save.
  // Neither, into a folder that holds checkpoints: refused. `keep` >= 2: how many checkpoints of
  // the line stay after a save (2 at least, so that the one `latest` named before it stays). Throws of::Error naming DIR.
  CheckpointWriter(std::string dir, bool resume, bool overwrite, int64_t keep = 2);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Refuses (of::Error) when DIR's file system has less free space than one checkpoint of
  // `bytes` needs.
  void check_space(uint64_t bytes) const;
  // Saves a staged checkpoint image (checkpoint.h: the first shard, and the others as they come,
  // until `abandoned`) and prunes this run's older ones. Returns its folder.
  std::string save(CheckpointImage& image, const CheckpointState& state, const std::function<bool()>& abandoned = {});
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int lock_fd_ = -1;
  std::deque<std::string> line_;  // step folder names of this run's line, oldest first
  int64_t keep_ = 2;
};

// The bytes one checkpoint of `inst` takes (the shards it writes, headers included).
uint64_t checkpoint_bytes(const PlanInstance& inst);

}  // namespace of::runtime::train
