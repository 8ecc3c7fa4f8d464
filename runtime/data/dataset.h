// SPDX-License-Identifier: Apache-2.0
// The training-data interface the source actors read from (one sample at a time, no allocation,
// no throwing), and make_dataset, which turns an `ofrun --data` spec into one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/ignore_index.h"
#include "common/shape.h"

namespace of::runtime::data {

// A fixed, fully validated set of samples. Every check happens when the dataset is opened, so
// read() can neither fail nor allocate. Features are f32 (IDX pixels, .npy features) or i64 (token
// ids); labels are always i64.
class Dataset {
 public:
  virtual ~Dataset() = default;
  // Number of samples.
  virtual int64_t size() const = 0;
  // One sample's features in the file's natural shape (IDX images: [rows,cols]; the caller
  // reshapes, e.g. to [1,28,28] or [784]).
  virtual const TensorDesc& features() const = 0;
  // One sample's label: an i64 scalar for classification, i64 [seq] for tokens, f32 [...] for
  // targets (npy).
  virtual const TensorDesc& labels() const = 0;
  // Copies sample `index` (0 <= index < size(), an internal invariant) into `features` and
  // `labels`, which hold features().bytes() and labels().bytes() bytes.
  virtual void read(int64_t index, void* features, void* labels) const = 0;
};

struct DataOptions {
  int64_t seq = 0;          // tokens: sequence length (required, > 0)
  int64_t vocab = 0;        // tokens: every token must be < vocab when > 0 (checked at open)
  int64_t num_classes = 0;  // idx, npy: every label must be < num_classes when > 0 ...
  int64_t ignore_label = kDefaultIgnoreIndex;  // ... and >= 0, or this one (the loss's ignore_index)
};

// Parses an `ofrun --data` spec and opens the dataset it names:
//   idx:DIR[,split=train|test]            MNIST-family IDX files, plain or .gz
//   npy:FEATURES.npy,LABELS.npy           f32 [n,...] features, i64/i32 [n,...] labels or f32 targets
//   tokens:FILE[,dtype=uint16|uint32]     flat little-endian token ids; options.seq is required
// Paths may not contain ','. Malformed specs fail with an of::Error quoting the spec.
std::unique_ptr<Dataset> make_dataset(const std::string& spec, const DataOptions& options);

}  // namespace of::runtime::data
