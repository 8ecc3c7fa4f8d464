// SPDX-License-Identifier: Apache-2.0
// The class id that cross-entropy ignores unless told another (--loss cross_entropy:ignore_index=K):
// torch's F.cross_entropy default. The compiler writes the attribute only when it differs, the
// kernels read it with this default, and the data sources accept labels of it.
#pragma once

#include <cstdint>

namespace of {

inline constexpr int64_t kDefaultIgnoreIndex = -100;

}  // namespace of
