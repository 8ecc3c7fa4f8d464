// SPDX-License-Identifier: Apache-2.0
// How many calls of one BatchNorm module a step's running-statistics update blends
// (batch_norm_stats_update takes a (mean, variance) pair per call): a bound the compiler checks a
// model against and the kernels size their arguments by, with no kernel code on either side.
#pragma once

#include <cstdint>

namespace of::kernels {

inline constexpr int64_t kMaxBatchNormCalls = 16;  // DINO's multi-crop: 2 global and up to 10 local views

}  // namespace of::kernels
