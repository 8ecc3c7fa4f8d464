// SPDX-License-Identifier: Apache-2.0
// The sink of an evaluation run: sums per-sample metrics ("eval/nll", "eval/correct") over the
// real samples of each batch (a padded last batch counts only its first rows), or, for a plan
// whose only output is a mean loss, averages the batch losses.
#pragma once

#include <cstdint>

#include "runtime/actors/protocol.h"

namespace of::runtime::train {

class EvalSinkAction final : public Action {
 public:
  // per_sample: inputs are each sample's sums over its labels (nll [batch], correct [batch],
  // count [batch]: its labels that count); else (loss []). The loss and accuracy are over every
  // counted label of the real samples (NaN where none counts, as torch's mean).
  EvalSinkAction(bool per_sample, int64_t batch, int64_t samples) : per_sample_(per_sample), batch_(batch), samples_(samples) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;

  int64_t counted() const { return counted_; }
  double mean_loss() const { return !per_sample_ ? (counted_ > 0 ? loss_ / double(counted_) : 0) : loss_ / labels_; }
  double accuracy() const { return correct_ / labels_; }

 private:
  bool per_sample_;
  int64_t batch_, samples_;
  int64_t counted_ = 0;
  double loss_ = 0, correct_ = 0, labels_ = 0;
};

}  // namespace of::runtime::train
