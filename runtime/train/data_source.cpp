// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/data_source.h"

#include <algorithm>
#include <cstring>

namespace of::runtime::train {

DataSourceAction::DataSourceAction(DataSourceConfig cfg)
    : cfg_(std::move(cfg)), sampler_(*cfg_.sampler), indices_(size_t(cfg_.batch)), feature_bytes_(uint64_t(cfg_.dataset->features().bytes())),
      label_bytes_(uint64_t(cfg_.dataset->labels().bytes())), feature_scratch_(feature_bytes_), label_scratch_(label_bytes_) {}

namespace {

// The part of sample r (of `size` bytes) that a window [begin, begin + bytes) covers.
struct Overlap {
  uint64_t from = 0, to = 0;  // within the sample
  bool none() const { return from >= to; }
};
Overlap overlap(int64_t r, uint64_t size, uint64_t begin, uint64_t bytes) {
  const uint64_t lo = uint64_t(r) * size, hi = lo + size;
  if (begin >= hi || begin + bytes <= lo) return Overlap{};
  return Overlap{std::max(lo, begin) - lo, std::min(hi, begin + bytes) - lo};
}

}  // namespace

void DataSourceAction::act(int64_t piece, const void* const*, void* const* out) {
  const int64_t global = cfg_.first_piece + piece;
  const SourceLayout& l = cfg_.layout;
  auto* features = l.features >= 0 ? static_cast<uint8_t*>(out[size_t(l.features)]) : nullptr;
  auto* labels = l.labels >= 0 ? static_cast<uint8_t*>(out[size_t(l.labels)]) : nullptr;
  if (features || labels) {
    sampler_.batch(global / cfg_.pieces_per_epoch, global % cfg_.pieces_per_epoch, indices_.data());
    for (int64_t r = 0; r < cfg_.batch; ++r) {
      const Overlap f = features ? overlap(r, feature_bytes_, l.features_begin, l.features_bytes) : Overlap{};
      const Overlap y = labels ? overlap(r, label_bytes_, l.labels_begin, l.labels_bytes) : Overlap{};
      if (f.none() && y.none()) continue;
      // A sample wholly in the window is read in place; any other through the scratch.
      const bool f_whole = !f.none() && f.from == 0 && f.to == feature_bytes_;
      const bool y_whole = !y.none() && y.from == 0 && y.to == label_bytes_;
      uint8_t* f_at = f.none() ? nullptr : features + (uint64_t(r) * feature_bytes_ + f.from - l.features_begin);
      uint8_t* y_at = y.none() ? nullptr : labels + (uint64_t(r) * label_bytes_ + y.from - l.labels_begin);
      cfg_.dataset->read(indices_[size_t(r)], f_whole ? f_at : feature_scratch_.data(), y_whole ? y_at : label_scratch_.data());
      if (!f.none() && !f_whole) std::memcpy(f_at, feature_scratch_.data() + f.from, f.to - f.from);
      if (!y.none() && !y_whole) std::memcpy(y_at, label_scratch_.data() + y.from, y.to - y.from);
    }
  }
  const int64_t step = global / cfg_.micro_batches + 1;
  if (l.lr >= 0) *static_cast<float*>(out[size_t(l.lr)]) = cfg_.schedule.at(step, cfg_.total_steps, cfg_.pieces_per_epoch / cfg_.micro_batches);
  if (l.step >= 0) *static_cast<float*>(out[size_t(l.step)]) = float(step);
}

bool DataSourceAction::stop_before(int64_t piece) {
  return cfg_.interrupt && cfg_.interrupt->load(std::memory_order_relaxed) &&
         (cfg_.first_piece + piece) % cfg_.micro_batches == 0;
}

}  // namespace of::runtime::train
