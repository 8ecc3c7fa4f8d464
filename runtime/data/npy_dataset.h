// SPDX-License-Identifier: Apache-2.0
// A dataset from two .npy files: features f32 [n, ...] and labels [n, ...]: class ids (i64 or
// i32) or float targets (f32, or f64 read as f32).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/ignore_index.h"
#include "runtime/data/fwd.h"

namespace of::runtime::data {

// Features: f32 with the per-sample shape [...] (rank 0 when the file is [n]); labels: i64 (class
// ids, >= 0 and < num_classes when num_classes > 0, or ignore_label) or f32 (any value), [...].
// n must be > 0 and agree.
std::unique_ptr<Dataset> open_npy_dataset(const std::string& features_path, const std::string& labels_path,
                                          int64_t num_classes = 0, int64_t ignore_label = kDefaultIgnoreIndex);

}  // namespace of::runtime::data
