// SPDX-License-Identifier: Apache-2.0
#include "runtime/data/sampler.h"

#include <numeric>
#include <random>

#include "common/error.h"

namespace of::runtime::data {
namespace {

// SplitMix64's finalizer: turns (seed, epoch) into well-spread mt19937_64 seeds, so that
// neighbouring seeds or epochs do not start from related states.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) by rejection: drop the lowest 2^64 mod bound raw values so that every
// residue is equally likely.
uint64_t below(std::mt19937_64& gen, uint64_t bound) {
  uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t r = gen();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

EpochSampler::EpochSampler(int64_t size, int64_t batch, uint64_t seed, bool drop_last, bool shuffle)
    : size_(size), batch_(batch), seed_(seed), shuffle_(shuffle) {
  if (size <= 0) fail({}, "sampler: dataset has no samples");
  if (batch <= 0) fail({}, "sampler: batch size must be > 0, not {}", batch);
  batches_ = drop_last ? size / batch : (size + batch - 1) / batch;
  if (batches_ == 0)
    fail({}, "sampler: {} samples make no full batch of {} (drop_last); lower the batch size", size, batch);
  order_.resize(size_t(size));
}

const std::vector<int64_t>& EpochSampler::permutation(int64_t epoch) {
  OF_ASSERT(epoch >= 0, "negative epoch");
  if (epoch == cached_epoch_) return order_;
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (shuffle_) {
    std::mt19937_64 gen(mix(seed_ ^ mix(uint64_t(epoch))));
    for (size_t i = order_.size() - 1; i > 0; --i) std::swap(order_[i], order_[below(gen, i + 1)]);
  }
  cached_epoch_ = epoch;
  return order_;
}

void EpochSampler::batch(int64_t epoch, int64_t b, int64_t* out_indices) {
  OF_ASSERT(b >= 0 && b < batches_, "batch index out of range");
  const std::vector<int64_t>& order = permutation(epoch);
  for (int64_t k = 0; k < batch_; ++k) out_indices[k] = order[size_t((b * batch_ + k) % size_)];
}

}  // namespace of::runtime::data
