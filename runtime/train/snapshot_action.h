// SPDX-License-Identifier: Apache-2.0
// The snapshot task's action: at every `every`-th step boundary it saves a checkpoint. The task
// reads every persistent register, so while it acts on piece n it holds version n of all weights
// and optimizer state: no update can run, and the copy it writes is one consistent step.
// Writing happens inside the act (the updates wait for it); the final checkpoint of a run is
// written by train() after the actors have stopped.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/actors/protocol.h"
#include "runtime/plan_instance.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_dir.h"

namespace of::runtime::train {

class SnapshotAction final : public Action {
 public:
  // every == 0 or no writer: never save (the task still paces itself with the run).
  SnapshotAction(const PlanInstance& inst, CheckpointWriter* writer, int64_t every, CheckpointState base, int64_t pieces_per_epoch)
      : inst_(inst), writer_(writer), every_(every), base_(std::move(base)), pieces_per_epoch_(pieces_per_epoch) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;
  int64_t saved() const { return saved_; }
  // The last version acted on: the state after that many pieces of this run (-1: none yet).
  int64_t last_version() const { return last_version_; }

 private:
  const PlanInstance& inst_;
  CheckpointWriter* writer_;
  int64_t every_;
  CheckpointState base_;  // seed, batch, model, data; step and position are filled per save
  int64_t pieces_per_epoch_;
  int64_t saved_ = 0;
  int64_t last_version_ = -1;
};

}  // namespace of::runtime::train
