// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/snapshot_action.h"

namespace of::runtime::train {

void SnapshotAction::act(int64_t piece, const void* const*, void* const*) {
  // Version `piece` holds the state after this run's first `piece` pieces; piece 0 is what the
  // run started from, already on disk or in the weights file.
  last_version_ = piece;
  if (saver_) saver_->rethrow();  // a write in the background failed: stop the run here
  const int64_t global = base_.pieces + piece;
  if (!saver_ || every_ <= 0 || piece == 0 || global % (int64_t(base_.micro_batches) * every_) != 0) return;
  CheckpointState s = base_;
  s.pieces = global;
  s.step = global / base_.micro_batches;
  s.epoch = global / pieces_per_epoch_;
  saver_->save(s);
  ++saved_;
  last_saved_step_ = s.step;
}

}  // namespace of::runtime::train
