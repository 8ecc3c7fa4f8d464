// SPDX-License-Identifier: Apache-2.0
#include "runtime/memory/high_water.h"

#include <algorithm>

#include <fmt/format.h>

namespace of::runtime {

std::vector<uint64_t> arena_high_water(const plan::Plan& p, uint8_t* const* arenas) {
  std::vector<uint64_t> marks(p.arenas.size(), 0);
  for (size_t a = 0; a < p.arenas.size(); ++a) {
    if (!arenas[a]) continue;
    uint64_t end = p.arenas[a].bytes;
    while (end > 0 && arenas[a][end - 1] == kCanary) --end;
    marks[a] = end;
  }
  return marks;
}

std::string high_water_line(const plan::Plan& p, const std::vector<uint64_t>& marks, const std::vector<bool>& unmeasured) {
  std::string out = "ofrun: arena high-water mark:";
  for (size_t a = 0; a < marks.size(); ++a) {
    if (a < unmeasured.size() && unmeasured[a]) out += fmt::format("{} {} not measured (GPU memory)", a ? "," : "", plan::device_label(p, p.arenas[a].device));
    else out += fmt::format("{} {} {} bytes", a ? "," : "", plan::device_label(p, p.arenas[a].device), marks[a]);
  }
  return out;
}

}  // namespace of::runtime
