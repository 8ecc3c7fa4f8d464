// SPDX-License-Identifier: Apache-2.0
#include "runtime/memory/high_water.h"

#include <algorithm>

#include <fmt/format.h>

namespace of::runtime {

std::vector<uint64_t> arena_high_water(const plan::Plan& p, const std::vector<std::unique_ptr<TaskState>>& tasks) {
  std::vector<uint64_t> marks(p.arenas.size(), 0);
  for (const plan::Variable& v : p.variables) marks[size_t(v.arena)] = std::max(marks[size_t(v.arena)], v.offset + v.bytes);
  for (const plan::Regst& r : p.regsts) {
    if (!tasks[size_t(r.producer)]) continue;  // another rank's
    const TaskState& producer = *tasks[size_t(r.producer)];
    for (int32_t s = 0; s < int32_t(r.offsets.size()); ++s)
      if (producer.slot_used(r.id, s)) marks[size_t(r.arena)] = std::max(marks[size_t(r.arena)], r.offsets[size_t(s)] + r.slot_bytes);
  }
  return marks;
}

std::string high_water_line(const plan::Plan& p, const std::vector<uint64_t>& marks) {
  std::string out = "ofrun: arena high-water mark:";
  for (size_t a = 0; a < marks.size(); ++a)
    out += fmt::format("{} {} {} bytes", a ? "," : "", plan::device_label(p, p.arenas[a].device), marks[a]);
  return out;
}

}  // namespace of::runtime
