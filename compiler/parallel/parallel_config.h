// SPDX-License-Identifier: Apache-2.0
// ofc --parallel-config FILE: what a user pins instead of leaving it to the cost model.
//   {
//     "stages": ["/blocks.2/ln1/LayerNormalization"],   // forward ops that begin stages 1, 2, ...
//     "sbp": {"fc1.weight": "S(1)", "/fc2/Gemm_output_0": "(S(0), P)"}  // one SBP per level
//   }
// Hints win: an op takes only signatures that give every hinted tensor it makes (or a weight it
// is the first to read) the hinted SBP.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/parallel/sbp.h"

namespace of::compiler {

struct ParallelConfig {
  std::vector<std::string> stage_starts;  // node names
  std::map<std::string, NdSbp> sbp;       // tensor name -> SBP per hierarchy level
};

// Reads and checks the file (syntax only: names are checked against the model by parallelize).
// `levels` is the number of hierarchy levels each SBP must have. Fails naming the file and field.
ParallelConfig read_parallel_config(const std::string& path, size_t levels);

// "S(1)", "B", "P", "(S(0), B)" -> NdSbp; nullopt-like failure via Error naming `where`.
NdSbp parse_nd_sbp(const std::string& text, const std::string& file, const std::string& field);

}  // namespace of::compiler
