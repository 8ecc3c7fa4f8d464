// SPDX-License-Identifier: Apache-2.0
#include "common/shape.h"

#include <fmt/format.h>

#include "common/error.h"

namespace of {

int64_t numel(const Shape& s) {
  // A zero anywhere means no elements, however large the product of the dims before it.
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) fail(Where{}, "shape {} has more than 2^63 elements", shape_str(s));
  return n;
}

int64_t TensorDesc::bytes() const {
  int64_t n;
  if (__builtin_mul_overflow(numel(shape), dtype_size(dtype), &n)) fail(Where{}, "tensor {} has more than 2^63 bytes", shape_str(shape));
  return n;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

}  // namespace of
