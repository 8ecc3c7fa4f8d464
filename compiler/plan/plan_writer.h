// SPDX-License-Identifier: Apache-2.0
// Serializes a compilation to a plan file and its companion weights file (safetensors). Both are
// written atomically, weights first, so a plan on disk never names weights that are not there.
#pragma once

#include <string>

namespace of::compiler {

struct Compilation;

// Returns the weights file's path.
std::string write_plan(const Compilation& c, const std::string& plan_path);

}  // namespace of::compiler
