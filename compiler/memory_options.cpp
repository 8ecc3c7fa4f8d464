// SPDX-License-Identifier: Apache-2.0
#include "compiler/memory_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/compile.h"

namespace of::compiler {

std::vector<plan::MemoryOption> memory_options(const std::string& model_path, const CompileOptions& o) {
  std::vector<plan::MemoryOption> out;
  if (!o.train) return out;
  const bool can_recompute = !o.recompute, can_zero = o.zero == 0 && o.dp > 1, can_tighten = share_order_of(o) != ShareOrder::tight && o.share_memory;
  struct Variant {
    bool recompute;
    int32_t zero;
    bool tight;
  };
  std::vector<Variant> variants;
  if (can_recompute) variants.push_back({true, 0, false});
  if (can_zero) variants.push_back({false, 3, false});
  if (can_recompute && can_zero) variants.push_back({true, 3, false});
  if (can_tighten) variants.push_back({false, 0, true});
  if (can_tighten && (can_recompute || can_zero)) variants.push_back({can_recompute, can_zero ? 3 : 0, true});
  // ZeRO 1: the weights once, the optimizer state split (one gather per weight and step, where
  // stage 3 gathers per use): less saved than stage 3, less communication.
  if (can_zero) variants.push_back({false, 1, false});
  for (const Variant& v : variants) {
    CompileOptions x = o;
    x.device_memory = 0;  // the point is to see how much it needs
    x.recompute = o.recompute || v.recompute;
    x.zero = v.zero > 0 ? v.zero : o.zero;
    if (v.tight) x.share_order = ShareOrder::tight;
    const std::string zero = fmt::format("--zero {}", v.zero);
    std::string flags;
    for (const auto& [on, flag] : {std::pair{v.recompute, std::string("--recompute")}, std::pair{v.zero > 0, zero},
                                   std::pair{v.tight, std::string("--share-order tight")}})
      if (on) flags += flags.empty() ? flag : " " + flag;
    try {
      const Compilation c = compile_model(model_path, x);
      plan::MemoryOption m{.flags = flags, .peaks = {}};
      for (const plan::Arena& a : c.tasks.arenas) m.peaks.push_back(a.bytes);
      out.push_back(std::move(m));
    } catch (const Error&) {
      // This model cannot take the option (the caller's plan compiled, so the option is why).
    }
  }
  return out;
}

std::string describe_largest(const std::vector<plan::MemoryOption>& options, uint64_t limit) {
  std::string out;
  for (const plan::MemoryOption& m : options) {
    const uint64_t largest = m.peaks.empty() ? 0 : *std::max_element(m.peaks.begin(), m.peaks.end());
    out += fmt::format("{}{} with {}{}", out.empty() ? "" : ", ", human(largest), m.flags, limit > 0 && largest <= limit ? " (fits)" : "");
  }
  return out;
}

}  // namespace of::compiler
