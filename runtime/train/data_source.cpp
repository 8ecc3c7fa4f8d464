// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/data_source.h"

namespace of::runtime::train {

DataSourceAction::DataSourceAction(DataSourceConfig cfg)
    : cfg_(std::move(cfg)), indices_(size_t(cfg_.batch)), feature_bytes_(uint64_t(cfg_.dataset->features().bytes())),
      label_bytes_(uint64_t(cfg_.dataset->labels().bytes())) {}

void DataSourceAction::act(int64_t piece, const void* const*, void* const* out) {
  const int64_t global = cfg_.first_piece + piece;
  const SourceLayout& l = cfg_.layout;
  cfg_.sampler->batch(global / cfg_.pieces_per_epoch, global % cfg_.pieces_per_epoch, indices_.data());
  auto* features = static_cast<uint8_t*>(out[size_t(l.features)]);
  auto* labels = static_cast<uint8_t*>(out[size_t(l.labels)]);
  for (int64_t r = 0; r < cfg_.batch; ++r)
    cfg_.dataset->read(indices_[size_t(r)], features + uint64_t(r) * feature_bytes_, labels + uint64_t(r) * label_bytes_);
  const int64_t step = global / cfg_.micro_batches + 1;
  if (l.lr >= 0) *static_cast<float*>(out[size_t(l.lr)]) = cfg_.schedule.at(step, cfg_.total_steps);
  if (l.step >= 0) *static_cast<float*>(out[size_t(l.step)]) = float(step);
}

bool DataSourceAction::stop_before(int64_t piece) {
  return cfg_.interrupt && cfg_.interrupt->load(std::memory_order_relaxed) &&
         (cfg_.first_piece + piece) % cfg_.micro_batches == 0;
}

}  // namespace of::runtime::train
