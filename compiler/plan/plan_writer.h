// SPDX-License-Identifier: Apache-2.0
// Serializes a compilation to a plan file and its companion weights file (safetensors). Both are
// written atomically, weights first, so a plan on disk never names weights that are not there.
#pragma once

#include <string>

namespace of::compiler {

struct Compilation;

// The files ofc writes for a plan path: the plan, its weights "<stem>.safetensors" beside it, and
// for training plans the evaluation plan "<stem>.eval.ofp".
struct PlanOutputs {
  std::string plan, weights, eval_plan;
};
PlanOutputs plan_outputs(const std::string& plan_path, bool training);

// Returns the weights file's path.
std::string write_plan(const Compilation& c, const std::string& plan_path);

// A training plan and its evaluation plan ("<stem>.eval.ofp" beside it, named by the training
// plan's job). Both read one weights file: the training plan's, which holds every weight and the
// optimizer state's initial zeros. Returns the weights file's path.
std::string write_training_plans(const Compilation& train, const Compilation& eval, const std::string& plan_path);

}  // namespace of::compiler
