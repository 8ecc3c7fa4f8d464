// SPDX-License-Identifier: Apache-2.0
#include "runtime/data/npy_dataset.h"

#include <fmt/core.h>

#include <cstring>

#include "common/error.h"
#include "common/npy.h"
#include "runtime/data/dataset.h"

namespace of::runtime::data {
namespace {

class NpyDataset final : public Dataset {
 public:
  // Labels [n, ...]: each sample's label is a tensor (one class id per position of a sequence
  // model, whose logits are [batch*seq, classes]; a regression or multi-label target) or, for
  // [n], a scalar; i64 class ids or f32 targets, `labels` holding their bytes.
  NpyDataset(NpyArray features, std::vector<uint8_t> labels, TensorDesc label_desc)
      : features_(std::move(features)),
        labels_(std::move(labels)),
        feature_desc_{Shape(features_.shape.begin() + 1, features_.shape.end()), DType::f32},
        label_desc_{std::move(label_desc)} {}

  int64_t size() const override { return features_.shape[0]; }
  const TensorDesc& features() const override { return feature_desc_; }
  const TensorDesc& labels() const override { return label_desc_; }

  void read(int64_t index, void* features, void* labels) const override {
    OF_ASSERT(index >= 0 && index < size(), "npy sample index out of range");
    size_t bytes = size_t(feature_desc_.bytes());
    std::memcpy(features, features_.data.data() + size_t(index) * bytes, bytes);
    bytes = size_t(label_desc_.bytes());
    std::memcpy(labels, labels_.data() + size_t(index) * bytes, bytes);
  }

 private:
  NpyArray features_;
  std::vector<uint8_t> labels_;
  TensorDesc feature_desc_;
  TensorDesc label_desc_;
};

}  // namespace

std::unique_ptr<Dataset> open_npy_dataset(const std::string& features_path, const std::string& labels_path,
                                          int64_t num_classes, int64_t ignore_label) {
  NpyArray features = read_npy(features_path, true);  // numpy's default float64 is read as f32
  if (features.from_f64) fmt::print(stderr, "ofrun: note: {}: float64 features converted to float32\n", features_path);
  if (features.dtype != DType::f32)
    fail({.file = features_path}, "features must be f32 (<f4), not {}", dtype_name(features.dtype));
  if (features.shape.empty()) fail({.file = features_path}, "features must be [n, ...], not a scalar");
  if (features.shape[0] == 0) fail({.file = features_path}, "holds no samples (shape {})", shape_str(features.shape));
  if (numel(features.shape) == 0)
    fail({.file = features_path}, "features {} have no elements per sample", shape_str(features.shape));

  NpyArray labels = read_npy(labels_path, true);  // float64 targets are read as f32, as features are
  if (labels.dtype != DType::i64 && labels.dtype != DType::i32 && labels.dtype != DType::f32)
    fail({.file = labels_path}, "labels must be class ids, i64 (<i8) or i32 (<i4), or f32 (<f4) targets, not {}", dtype_name(labels.dtype));
  if (labels.shape.empty()) fail({.file = labels_path}, "labels must be [n] or [n, ...], not a scalar");
  if (labels.shape[0] != features.shape[0])
    fail({.file = labels_path}, "holds {} labels but {} holds {} samples", labels.shape[0], features_path,
         features.shape[0]);
  Shape label_shape(labels.shape.begin() + 1, labels.shape.end());
  if (labels.dtype == DType::f32) {  // targets (a regression's, a multi-label classifier's): any value
    if (labels.from_f64) fmt::print(stderr, "ofrun: note: {}: float64 labels converted to float32\n", labels_path);
    return std::make_unique<NpyDataset>(std::move(features), std::move(labels.data), TensorDesc{std::move(label_shape), DType::f32});
  }

  std::vector<int64_t> values(size_t(numel(labels.shape)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (labels.dtype == DType::i64) {
      std::memcpy(&values[i], labels.data.data() + 8 * i, 8);
    } else {
      int32_t v;
      std::memcpy(&v, labels.data.data() + 4 * i, 4);
      values[i] = v;
    }
    if (values[i] == ignore_label) continue;  // counts nowhere (the loss's ignore_index)
    if (values[i] < 0) fail({.file = labels_path}, "label {} at index {} is negative", values[i], i);
    if (num_classes > 0 && values[i] >= num_classes)
      fail({.file = labels_path}, "label {} at index {} is out of range (num_classes {})", values[i], i, num_classes);
  }
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return std::make_unique<NpyDataset>(std::move(features), std::move(bytes), TensorDesc{std::move(label_shape), DType::i64});
}

}  // namespace of::runtime::data
