// SPDX-License-Identifier: Apache-2.0
// A data source fills its window of each batch tensor: the whole batch, a rank's rows, or a byte
// range that cuts samples (a first axis that is not the batch). Whatever the windows, the sources
// of one plan together write exactly the batch one source would.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "runtime/train/data_source.h"

using namespace of;
using namespace of::runtime;

namespace {

// Sample i: features {10i, 10i+1, 10i+2} (f32 [3]), label i.
class CountingDataset final : public data::Dataset {
 public:
  explicit CountingDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  const TensorDesc& features() const override { return features_; }
  const TensorDesc& labels() const override { return labels_; }
  void read(int64_t index, void* features, void* labels) const override {
    auto* f = static_cast<float*>(features);
    for (int k = 0; k < 3; ++k) f[k] = float(10 * index + k);
    *static_cast<int64_t*>(labels) = index;
  }

 private:
  int64_t n_;
  TensorDesc features_{{3}, DType::f32};
  TensorDesc labels_{{}, DType::i64};
};

constexpr int64_t kBatch = 4;
constexpr uint64_t kFeatureBytes = kBatch * 3 * 4, kLabelBytes = kBatch * 8;

struct Batch {
  std::vector<uint8_t> features = std::vector<uint8_t>(kFeatureBytes, 0xEE), labels = std::vector<uint8_t>(kLabelBytes, 0xEE);
  float lr = 0, step = 0;
};

// Runs a source with the given windows on piece `piece`, writing into `b` at the windows' places.
void fill(const CountingDataset& d, const data::EpochSampler& s, train::SourceLayout l, int64_t piece, Batch& b) {
  train::DataSourceConfig c{.dataset = &d, .sampler = &s, .layout = l, .batch = kBatch, .first_piece = 0,
                            .pieces_per_epoch = s.batches_per_epoch(), .micro_batches = 1,
                            .schedule = LrSchedule::parse("constant", 0.5f), .total_steps = 10, .interrupt = nullptr};
  train::DataSourceAction a(c);
  std::vector<std::vector<uint8_t>> blobs{std::vector<uint8_t>(l.features_bytes), std::vector<uint8_t>(l.labels_bytes), {}, {}};
  void* out[4] = {blobs[0].data(), blobs[1].data(), &b.lr, &b.step};
  a.act(piece, nullptr, out);
  std::memcpy(b.features.data() + l.features_begin, blobs[0].data(), l.features_bytes);
  std::memcpy(b.labels.data() + l.labels_begin, blobs[1].data(), l.labels_bytes);
}

train::SourceLayout window(uint64_t fb, uint64_t fn, uint64_t lb, uint64_t ln) {
  return train::SourceLayout{.features = 0, .labels = 1, .lr = 2, .step = 3, .features_begin = fb, .features_bytes = fn,
                             .labels_begin = lb, .labels_bytes = ln};
}

}  // namespace

TEST_CASE("data source: the whole window holds the sampler's batch", "[runtime]") {
  const CountingDataset d(12);
  const data::EpochSampler s(12, kBatch, 7, true);
  data::EpochSampler order = s;
  std::vector<int64_t> idx(kBatch);
  order.batch(0, 1, idx.data());
  Batch b;
  fill(d, s, window(0, kFeatureBytes, 0, kLabelBytes), 1, b);
  for (int64_t r = 0; r < kBatch; ++r) {
    float f[3];
    std::memcpy(f, b.features.data() + r * 12, 12);
    CHECK(f[0] == float(10 * idx[size_t(r)]));
    CHECK(f[2] == float(10 * idx[size_t(r)] + 2));
    int64_t y;
    std::memcpy(&y, b.labels.data() + r * 8, 8);
    CHECK(y == idx[size_t(r)]);
  }
  CHECK(b.lr == 0.5f);
  CHECK(b.step == 2.0f);
}

TEST_CASE("data source: windows by rows and windows that cut samples together write the whole batch", "[runtime]") {
  const CountingDataset d(12);
  const data::EpochSampler s(12, kBatch, 3, true);
  Batch whole;
  fill(d, s, window(0, kFeatureBytes, 0, kLabelBytes), 2, whole);

  SECTION("two ranks, a half of the rows each") {
    Batch b;
    fill(d, s, window(0, kFeatureBytes / 2, 0, kLabelBytes / 2), 2, b);
    fill(d, s, window(kFeatureBytes / 2, kFeatureBytes / 2, kLabelBytes / 2, kLabelBytes / 2), 2, b);
    CHECK(b.features == whole.features);
    CHECK(b.labels == whole.labels);
  }
  SECTION("three windows that begin and end inside samples") {
    Batch b;
    fill(d, s, window(0, 20, 0, 8), 2, b);
    fill(d, s, window(20, 8, 8, 16), 2, b);
    fill(d, s, window(28, kFeatureBytes - 28, 24, 8), 2, b);
    CHECK(b.features == whole.features);
    CHECK(b.labels == whole.labels);
  }
}

TEST_CASE("data source: a source that holds no batch tensor writes only the step scalars", "[runtime]") {
  const CountingDataset d(12);
  const data::EpochSampler s(12, kBatch, 3, true);
  train::DataSourceConfig c{.dataset = &d, .sampler = &s, .layout = train::SourceLayout{.lr = 0, .step = 1}, .batch = kBatch,
                            .first_piece = 4, .pieces_per_epoch = s.batches_per_epoch(), .micro_batches = 2,
                            .schedule = LrSchedule::parse("constant", 0.25f), .total_steps = 10, .interrupt = nullptr};
  train::DataSourceAction a(c);
  float lr = 0, step = 0;
  void* out[2] = {&lr, &step};
  a.act(1, nullptr, out);
  CHECK(lr == 0.25f);
  CHECK(step == 3.0f);  // global piece 5 of 2 per step: step 3
}
