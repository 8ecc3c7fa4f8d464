// SPDX-License-Identifier: Apache-2.0
// Reductions of one contiguous row, in a fixed order that vectorizes: eight interleaved partial
// results (element j into lane j % 8) combined pairwise, then the tail in order. A single running
// sum waits on each add in turn (4096 logits a row: ~4 us of a loss's row on one core); this
// order has one add in flight per lane and is the same on every machine whatever its vector width.
#pragma once

#include <cstdint>

namespace of::kernels::cpu {

// The sum of x[0..n) in the order above (not the left-to-right sum: bits may differ from it).
float row_sum(const float* x, int64_t n);

// The largest of x[0..n) as a left-to-right std::max from -inf gives it (NaNs are passed over;
// -inf for an empty or all-NaN row): max is exact, so the lanes change nothing but the speed.
float row_max(const float* x, int64_t n);

}  // namespace of::kernels::cpu
