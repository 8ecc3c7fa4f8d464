// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/step_time.h"
#include "compiler/passes/pass.h"

namespace of::compiler {

bool PredictStepTime::run(Compilation& c) {
  PlayedPlan played{c.tasks, {}, c.options.train ? c.options.micro_batches : 1};
  for (const Value& v : c.graph.values) played.tensors.push_back(v.desc);
  c.tasks.prediction.step_seconds = predict_step(played, c.options.costs).step_seconds;
  c.tasks.prediction.costs = c.options.costs.source;
  return false;  // the graph is unchanged
}

}  // namespace of::compiler
