// SPDX-License-Identifier: Apache-2.0
// A source task of a training or evaluation run: piece p (counted over the whole training, so
// a resumed run continues where it stopped) is micro-batch p of the sampler's stream, plus the
// step's scalars the optimizer reads (learning rate, 1-based step). Prefetch
// is the source register's slots: the source runs that many pieces ahead of the model.
// In a plan of several ranks every rank's source draws the same batches (the sampler is seeded
// alike everywhere) and reads only the samples, or parts of samples, its window of each tensor
// covers: each data-parallel rank reads its own rows.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "common/lr_schedule.h"
#include "runtime/actors/protocol.h"
#include "runtime/data/dataset.h"
#include "runtime/data/sampler.h"

namespace of::runtime::train {

struct SourceLayout {
  // Blob index in the source register of each role; -1 when this source holds no such input
  // (the plan's lead source may hold none of the batch when no device of rank 0 reads it).
  int features = -1, labels = -1, lr = -1, step = -1;
  // Which bytes of the whole batch's features (labels) the blob holds: [begin, begin + bytes).
  uint64_t features_begin = 0, features_bytes = 0, labels_begin = 0, labels_bytes = 0;
};

struct DataSourceConfig {
  const data::Dataset* dataset = nullptr;
  const data::EpochSampler* sampler = nullptr;  // copied: each source draws from its own
  SourceLayout layout;
  int64_t batch = 1;             // samples per piece
  int64_t first_piece = 0;       // global index of this run's piece 0
  int64_t pieces_per_epoch = 1;  // a multiple of micro_batches
  int32_t micro_batches = 1;
  LrSchedule schedule;
  int64_t total_steps = 1;       // of the whole training (for the schedule)
  // Set by SIGINT: the stream ends before the next step begins.
  const std::atomic<bool>* interrupt = nullptr;
};

class DataSourceAction final : public Action {
 public:
  explicit DataSourceAction(DataSourceConfig cfg);
  void act(int64_t piece, const void* const* in, void* const* out) override;
  bool stop_before(int64_t piece) override;

 private:
  DataSourceConfig cfg_;
  data::EpochSampler sampler_;
  std::vector<int64_t> indices_;  // one batch, sized once
  uint64_t feature_bytes_, label_bytes_;
  // A sample only partly in this source's window is read here first.
  std::vector<uint8_t> feature_scratch_, label_scratch_;
};

}  // namespace of::runtime::train
