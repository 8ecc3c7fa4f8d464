// SPDX-License-Identifier: Apache-2.0
#include "runtime/plan/memory_kinds.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace of::runtime {
namespace {

using Range = std::pair<uint64_t, uint64_t>;  // [begin, end) in the arena

uint64_t union_bytes(std::vector<Range>& ranges) {
  std::sort(ranges.begin(), ranges.end());
  uint64_t total = 0, begin = 0, end = 0;
  bool open = false;
  for (const auto& [b, e] : ranges) {
    if (open && b <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += end - begin;
    begin = b, end = e, open = true;
  }
  if (open) total += end - begin;
  return total;
}

bool is_boxing(const plan::Task& t) {
  return t.kind == plan::TaskKind::transfer || t.kind == plan::TaskKind::collective || t.name.find("/boxing/") != std::string::npos;
}

}  // namespace

std::vector<ArenaKinds> memory_by_kind(const plan::Plan& p) {
  std::vector<ArenaKinds> out(p.arenas.size());
  std::vector<std::array<std::vector<Range>, 5>> ranges(p.arenas.size());
  auto tensor_name = [&](int32_t t) { return t >= 0 && size_t(t) < p.tensors.size() ? p.tensors[size_t(t)].name : std::string("?"); };
  for (const plan::Variable& v : p.variables) {
    if (v.arena < 0 || size_t(v.arena) >= p.arenas.size() || v.bytes == 0) continue;
    ranges[size_t(v.arena)][size_t(MemoryKind::weights)].emplace_back(v.offset, v.offset + v.bytes);
    out[size_t(v.arena)].largest.push_back({v.bytes, fmt::format("'{}'", v.key), MemoryKind::weights});
  }
  // What a register's slots hold comes from who writes it; a transfer's mirror of the source's
  // register is data, of any other register boxing.
  std::vector<bool> data(p.regsts.size(), false);
  for (const plan::Regst& r : p.regsts) {
    const plan::Task& producer = p.tasks[size_t(r.producer)];
    if (producer.kind == plan::TaskKind::source) data[size_t(r.id)] = true;
  }
  for (const plan::Task& t : p.tasks)  // transfers come after what they copy in the plan's order
    if (t.kind == plan::TaskKind::transfer && !t.in_regsts.empty() && data[size_t(t.in_regsts[0])])
      for (plan::RegstId r : t.out_regsts) data[size_t(r)] = true;
  for (const plan::Regst& r : p.regsts) {
    if (r.arena < 0 || size_t(r.arena) >= p.arenas.size() || r.slot_bytes == 0) continue;
    const plan::Task& producer = p.tasks[size_t(r.producer)];
    auto& per_kind = ranges[size_t(r.arena)];
    if (r.persistent) {  // one slot: a weight and its optimizer state, blob by blob
      for (const plan::Blob& b : r.blobs) {
        const bool model = b.tensor >= 0 && size_t(b.tensor) < p.tensors.size() && p.tensors[size_t(b.tensor)].model;
        const MemoryKind kind = model ? MemoryKind::weights : MemoryKind::optimizer;
        for (uint64_t off : r.offsets) per_kind[size_t(kind)].emplace_back(off + b.offset, off + b.offset + b.bytes);
        out[size_t(r.arena)].largest.push_back({b.bytes, fmt::format("'{}'", tensor_name(b.tensor)), kind});
      }
      continue;
    }
    const MemoryKind kind = data[size_t(r.id)] ? MemoryKind::data : is_boxing(producer) ? MemoryKind::boxing : MemoryKind::activations;
    for (uint64_t off : r.offsets) per_kind[size_t(kind)].emplace_back(off, off + r.slot_bytes);
    const std::string what = r.blobs.size() == 1 ? fmt::format("'{}'", tensor_name(r.blobs[0].tensor))
                                                 : fmt::format("the output of '{}'", producer.name);
    out[size_t(r.arena)].largest.push_back(
        {r.slot_bytes * uint64_t(r.slots), r.slots > 1 ? fmt::format("{} ({} slots)", what, r.slots) : what, kind});
  }
  for (size_t a = 0; a < out.size(); ++a) {
    for (size_t k = 0; k < 5; ++k) out[a].bytes[k] = union_bytes(ranges[a][k]);
    auto& items = out[a].largest;
    const size_t keep = std::min<size_t>(3, items.size());
    std::partial_sort(items.begin(), items.begin() + ptrdiff_t(keep), items.end(),
                      [](const ArenaItem& x, const ArenaItem& y) { return x.bytes > y.bytes; });
    items.resize(keep);
  }
  return out;
}

}  // namespace of::runtime
