// SPDX-License-Identifier: Apache-2.0
// The snapshot task's action: at every `every`-th step boundary it saves a checkpoint. The task
// reads every persistent register, so while it acts on piece n it holds version n of all weights
// and optimizer state: no update can run, and the copy it stages is one consistent step. The act
// only copies the tensors into the saver's image; the saver's thread writes the files while the
// next steps train (background_save.h). A write that failed fails the next act, so the run
// stops naming this task. The final checkpoint of a run is saved by train() after the actors
// have stopped.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/actors/protocol.h"
#include "runtime/train/background_save.h"
#include "runtime/train/checkpoint.h"

namespace of::runtime::train {

class SnapshotAction final : public Action {
 public:
  // every == 0 or no saver: never save (the task still paces itself with the run).
  SnapshotAction(BackgroundSaver* saver, int64_t every, CheckpointState base, int64_t pieces_per_epoch)
      : saver_(saver), every_(every), base_(std::move(base)), pieces_per_epoch_(pieces_per_epoch) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;
  int64_t saved() const { return saved_; }
  // The step of the last checkpoint this action saved (-1: none).
  int64_t last_saved_step() const { return last_saved_step_; }
  // The last version acted on: the state after that many pieces of this run (-1: none yet).
  int64_t last_version() const { return last_version_; }

 private:
  BackgroundSaver* saver_;
  int64_t every_;
  CheckpointState base_;  // seed, batch, model, data; step and position are filled per save
  int64_t pieces_per_epoch_;
  int64_t saved_ = 0;
  int64_t last_version_ = -1;
  int64_t last_saved_step_ = -1;
};

}  // namespace of::runtime::train
