// SPDX-License-Identifier: Apache-2.0
// Tensor shapes and descriptors: plain value types used on every side of the plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace of {

using Shape = std::vector<int64_t>;

// Number of elements; 1 for a scalar (rank 0). A count beyond int64 fails with of::Error (shapes
// come from untrusted files).
int64_t numel(const Shape& s);
// "[64,784]"
std::string shape_str(const Shape& s);

struct TensorDesc {
  Shape shape;
  DType dtype = DType::f32;
  int64_t bytes() const;  // fails like numel() past int64
};

}  // namespace of
