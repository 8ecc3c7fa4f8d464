// SPDX-License-Identifier: Apache-2.0
#include "common/shape.h"

#include <fmt/format.h>

namespace of {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

}  // namespace of
