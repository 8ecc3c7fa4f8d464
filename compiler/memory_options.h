// SPDX-License-Identifier: Apache-2.0
// What each memory option would do to a training plan, known before launch: the model compiled
// again with --recompute, with --zero 3 (data-parallel plans), with both, with --share-order tight,
// with all of them and with --zero 1, wherever the options do not already have them, and each device's peak read
// off those plans. Compiling is the only
// honest way to know: recompute's gain depends on which activations cheap ops make, ZeRO's on
// which weights split and what their gathered copies cost.
#pragma once

#include <string>
#include <vector>

#include "compiler/passes/pass.h"

namespace of::compiler {

// The options `o` (a training compilation) does not use yet, each with every device's peak; empty
// for an inference plan or one that uses them all. A variant that does not compile is left out.
std::vector<plan::MemoryOption> memory_options(const std::string& model_path, const CompileOptions& o);

// "150.2 MiB with --recompute, 138.5 MiB with --zero 3 (fits)": the largest device's peak under
// each option, marking those within `limit` bytes (0: no limit).
std::string describe_largest(const std::vector<plan::MemoryOption>& options, uint64_t limit);

}  // namespace of::compiler
