// SPDX-License-Identifier: Apache-2.0
// ofc --auto: the parallel strategy of least predicted step time that fits --device-memory.
//
// The candidates are every data x tensor x pipeline split of the devices (dp * tp * pp = N), the
// degrees the user gave held fixed, --parallel-config's hints applied to each; the micro-batches
// stay as given (they are the step's samples: changing them would change the training). Each is
// compiled in full and costed by its predicted step time (compiler/parallel/step_time.h) and its
// largest device. Only when none fits the memory are --share-order tight, --recompute, --zero 3, the
// last two together and all three weighed, in that order (what each costs), as memory_options.h
// does for one plan.
//
// Compiling a candidate is what makes the prediction honest (it plays the plan ofrun would run),
// and what costs: a GPT on 8x8 devices has 28 splits, 53 s of compiles. So when there are more
// splits than AutoConstraints::compiled, they are first ordered by a closed-form estimate
// (compiler/parallel/strategy_cost.h: compute, dp and tp all-reduces, pipeline fill and
// transfers, per link kind) and only the best few that compile are compiled and played; the
// plan's candidates list those. Per-op SBP is still chosen by parallelize, not searched.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"

namespace of::compiler {

struct AutoConstraints {
  std::optional<int32_t> dp, tp, pp;  // degrees the user gave
  int32_t max_candidates = 128;       // compiles at most this many (a bound by count: deterministic)
  // Splits compiled in full: more than this many are first ordered by their estimate
  // (strategy_cost.h) and only the best ones that compile are compiled (splits refused before
  // parallelize do not count; those refused for their size, past max_parallel_nodes, do).
  int32_t compiled = 3;
};

struct AutoChoice {
  Compilation best;                        // compiled with best.options
  std::vector<plan::Candidate> candidates; // best first: weighed ones by predicted time, then refused ones
  int32_t ranked = 0;                      // splits considered (ordered by estimate when more than compiled)
};

// Fails (naming --auto) when no candidate compiles and fits, with the first candidates' reasons.
AutoChoice choose_parallel(const std::string& model_path, const CompileOptions& base, const AutoConstraints& fixed);

// "--dp 2 --tp 2 --pp 1" and the memory flags of o.
std::string strategy_flags(const CompileOptions& o);

}  // namespace of::compiler
