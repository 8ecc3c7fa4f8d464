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
// Compiling every candidate is what makes the prediction honest (it plays the plan ofrun would
// run) and what bounds the search: a few candidates per device count, each a compile. A cost of
// a strategy before it is materialised (issue 13's strategy/cost split) would let the search
// weigh per-op SBP and many more candidates; it is not built.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"

namespace of::compiler {

struct AutoConstraints {
  std::optional<int32_t> dp, tp, pp;  // degrees the user gave
  int32_t max_candidates = 128;       // compiles at most this many (a bound by count: deterministic)
};

struct AutoChoice {
  Compilation best;                        // compiled with best.options
  std::vector<plan::Candidate> candidates; // best first: weighed ones by predicted time, then refused ones
};

// Fails (naming --auto) when no candidate compiles and fits, with the first candidates' reasons.
AutoChoice choose_parallel(const std::string& model_path, const CompileOptions& base, const AutoConstraints& fixed);

// "--dp 2 --tp 2 --pp 1" and the memory flags of o.
std::string strategy_flags(const CompileOptions& o);

}  // namespace of::compiler
