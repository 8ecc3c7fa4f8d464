// SPDX-License-Identifier: Apache-2.0
#include "compiler/auto_parallel.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/parallel/strategy_cost.h"

namespace of::compiler {

std::string strategy_flags(const CompileOptions& o) {
  std::string s = fmt::format("--dp {} --tp {} --pp {}", o.dp, o.tp, o.pp);
  if (o.recompute) s += " --recompute";
  if (o.zero > 0) s += fmt::format(" --zero {}", o.zero);
  if (o.share_order == ShareOrder::tight) s += " --share-order tight";
  if (o.share_order == ShareOrder::loose) s += " --share-order loose";
  return s;
}

namespace {

uint64_t largest_arena(const Compilation& c) {
  uint64_t m = 0;
  for (const plan::Arena& a : c.tasks.arenas) m = std::max(m, a.bytes);
  return m;
}

// An error's message on one line (they are already; a nested one might not be).
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

AutoChoice choose_parallel(const std::string& model_path, const CompileOptions& base, const AutoConstraints& fixed) {
  const int32_t n = base.devices;
  std::vector<CompileOptions> splits;
  for (int32_t dp = 1; dp <= n; ++dp) {
    if (n % dp != 0 || (fixed.dp && *fixed.dp != dp)) continue;
    for (int32_t tp = 1; tp <= n / dp; ++tp) {
      if ((n / dp) % tp != 0 || (fixed.tp && *fixed.tp != tp)) continue;
      const int32_t pp = n / dp / tp;
      if (fixed.pp && *fixed.pp != pp) continue;
      CompileOptions o = base;
      o.dp = dp;
      o.tp = tp;
      o.pp = pp;
      splits.push_back(o);
    }
  }
  if (splits.empty())
    fail({.field = "--auto"}, "no split of {} devices has the degrees given (--dp x --tp x --pp must be the device count)", n);
  // More splits than are worth compiling: ordered by their estimate, the first few compiled.
  const size_t ranked = splits.size();
  std::vector<double> estimated;  // per split, when ranked
  if (splits.size() > size_t(fixed.compiled)) {
    const Compilation logical = compile_before_parallelize(model_path, base);
    std::vector<std::pair<double, size_t>> order;
    for (size_t i = 0; i < splits.size(); ++i) {
      const CompileOptions& o = splits[i];
      const StrategyShape shape{.dp = o.dp, .tp = o.tp, .pp = o.pp, .micro_batches = o.train ? o.micro_batches : 1,
                                .ranks = o.ranks, .devices = o.devices, .zero = o.zero > 0};
      order.emplace_back(estimate_strategy(logical.graph, shape, base.costs).step_seconds(), i);
    }
    std::stable_sort(order.begin(), order.end());
    std::vector<CompileOptions> sorted;
    for (const auto& [seconds, i] : order) {
      sorted.push_back(splits[i]);
      estimated.push_back(seconds);
    }
    splits = std::move(sorted);
  }
  std::vector<plan::Candidate> weighed, refused;
  // The best plan so far stays in memory beside the one being compiled (a GPT over 1024 devices
  // is gigabytes of ofc's memory, but compiling the best again at the end cost as much time as
  // the first compile: 12 s on 128x8).
  std::optional<Compilation> best;
  double best_seconds = 0;
  int32_t compiled = 0;
  // Splits refused for their size count toward fixed.compiled as if compiled: reaching the bound
  // took most of a compile (on 128x8 the GPT's tp-heavy splits each built 1.7M nodes, about 12 s,
  // before they were refused), while those refused at once (a pipeline deeper than the
  // micro-batches or the ops) do not.
  int32_t too_large = 0;
  uint64_t max_nodes = 0;  // set by the first plan weighed
  auto weigh = [&](const CompileOptions& o) {
    if (compiled >= fixed.max_candidates) return;
    ++compiled;
    plan::Candidate k{.flags = strategy_flags(o), .step_seconds = 0, .peak_bytes = 0, .refused = {}};
    try {
      CompileOptions bounded = o;
      bounded.max_parallel_nodes = max_nodes;
      Compilation c = compile_model(model_path, bounded);
      c.options.max_parallel_nodes = 0;  // the plan's options as given (the eval plan compiles with them)
      // A candidate's plan may be far larger than the first's (tp over many ranks): one of more
      // than 4 times its nodes is refused as soon as it passes that, before it fills the memory
      // (the GPT on 128x8: dp 1024 is 0.5M nodes, dp 256 x tp 4 grew past 6M and 20 GB). At least
      // a million nodes are always allowed: small models are weighed in full.
      if (max_nodes == 0) max_nodes = std::max<uint64_t>(4 * uint64_t(c.graph.nodes.size()), uint64_t(1) << 20);
      k.step_seconds = c.tasks.prediction.step_seconds;
      k.peak_bytes = largest_arena(c);
      // Ties keep the first in the order weighed (the estimate's, else dp ascending, then tp).
      if (!best || k.step_seconds < best_seconds) {
        best.reset();  // before the move: one plan fewer at the peak
        best = std::move(c);
        best_seconds = k.step_seconds;
      }
      weighed.push_back(std::move(k));
    } catch (const Error& e) {
      if (e.where().field == "--auto") ++too_large;  // parallelize's bound (max_parallel_nodes)
      k.refused = one_line(e.what());
      refused.push_back(std::move(k));
    }
  };
  for (size_t i = 0; i < splits.size() && weighed.size() + size_t(too_large) < size_t(fixed.compiled); ++i) {
    if (base.time_passes)  // at scale a compile takes minutes: say which
      fmt::print(stderr, "ofc: --auto compiles {}{}\n", strategy_flags(splits[i]),
                 estimated.empty() ? "" : fmt::format(" (estimated {:.3f} ms)", 1e3 * estimated[i]));
    weigh(splits[i]);
  }
  // Nothing fits: the memory options, in the order of what they cost (a tight order costs
  // overlap, recompute adds work, ZeRO adds gathers: stage 1 one per weight and step, stage 3 one
  // per use), each over every split.
  if (!best && base.train && base.device_memory > 0) {
    struct Option {
      bool tight, recompute;
      int32_t zero;
    };
    for (const Option& m : {Option{true, false, 0}, Option{false, true, 0}, Option{false, false, 1}, Option{false, false, 3},
                            Option{false, true, 3}, Option{true, true, 3}}) {
      for (CompileOptions o : splits) {
        if (weighed.size() >= size_t(fixed.compiled)) break;
        if ((m.recompute && base.recompute) || (m.zero > 0 && (base.zero > 0 || o.dp < 2)) ||
            (m.tight && (share_order_of(base) == ShareOrder::tight || !base.share_memory)))
          continue;
        o.recompute = base.recompute || m.recompute;
        o.zero = m.zero > 0 ? m.zero : base.zero;
        if (m.tight) o.share_order = ShareOrder::tight;
        weigh(o);
      }
      if (best) break;
    }
  }
  if (!best) {
    std::string why;
    for (size_t i = 0; i < refused.size() && i < 3; ++i) why += fmt::format("{}{}: {}", i ? "; " : "", refused[i].flags, refused[i].refused);
    fail({.field = "--auto"}, "none of the {} strategies weighed compiles{}: {}", compiled, base.device_memory > 0 ? " and fits" : "", why);
  }
  std::stable_sort(weighed.begin(), weighed.end(), [](const plan::Candidate& a, const plan::Candidate& b) { return a.step_seconds < b.step_seconds; });
  AutoChoice out{.best = std::move(*best), .candidates = std::move(weighed), .ranked = int32_t(ranked)};
  out.candidates.insert(out.candidates.end(), refused.begin(), refused.end());
  out.best.tasks.prediction.candidates = out.candidates;
  return out;
}

}  // namespace of::compiler
