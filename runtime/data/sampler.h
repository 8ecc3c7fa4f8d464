// SPDX-License-Identifier: Apache-2.0
// Which samples go into which batch: a seeded permutation per epoch that is the same on every
// machine and compiler (hence our own Fisher-Yates and bounded draws over std::mt19937_64, whose
// output the standard fixes; std::shuffle and uniform_int_distribution are implementation-defined).
#pragma once

#include <cstdint>
#include <vector>

namespace of::runtime::data {

class EpochSampler {
 public:
  // size: samples in the dataset; batch: samples per batch. Fails (of::Error) when size or batch
  // is not positive, or when drop_last leaves no batch at all (size < batch).
  EpochSampler(int64_t size, int64_t batch, uint64_t seed, bool drop_last, bool shuffle = true);

  int64_t batches_per_epoch() const { return batches_; }

  // Fills out_indices[0, batch) with batch b (0 <= b < batches_per_epoch()) of epoch `epoch`.
  // Without drop_last the last batch, when partial, is padded by wrapping around to the start of
  // the same epoch's permutation, so every batch is full and the padding repeats that epoch's first
  // samples. Not thread-safe: it caches the current epoch's permutation (one sampler per reader).
  void batch(int64_t epoch, int64_t b, int64_t* out_indices);

  // The order of epoch `epoch` (identity without shuffle).
  const std::vector<int64_t>& permutation(int64_t epoch);

 private:
  int64_t size_;
  int64_t batch_;
  uint64_t seed_;
  bool shuffle_;
  int64_t batches_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace of::runtime::data
