// SPDX-License-Identifier: Apache-2.0
// The pass order, one line per pass, each saying why it comes where it does.
#include <chrono>

#include <fmt/core.h>

#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

namespace of::compiler {

Pipeline build_pipeline(const CompileOptions&) {
  Pipeline p;
  p.add<FuseGelu>();         // on the imported ops, before lowering and autodiff see them
  p.add<FuseLayerNorm>();    // likewise: before infer-shapes lowers the eight ops it replaces
  p.add<InferShapes>();      // every later pass reads shapes, dtypes and the lowered kernels
  p.add<FuseTransposedWeights>();  // needs shapes; before autodiff, so the gradient is the fused op's
  p.add<FuseMaskedSoftmax>();      // likewise (and the mask is a constant by now: infer-shapes folds it)
  p.add<Autodiff>();         // needs lowered kernels (grad rules read their attributes)
  p.add<AddOptimizer>();     // needs every weight's gradient
  p.add<Recompute>();        // needs the whole backward pass (and BatchNorm's update); before parallelize, which gives clones their original's signature
  p.add<Parallelize>();      // after the optimizer: SBP covers forward, backward and updates alike
  p.add<SplitBatchNorm>();   // per device, after parallelize (the pair shares its device's batch part); before fusing its apply with a ReLU
  p.add<FuseActivations>();  // per device, so a partial-sum Gemm keeps its ReLU apart; before lowering
  p.add<ReshapeViews>();     // per device, after every pass that reads nodes' input shapes; before lowering
  p.add<LowerToTasks>();     // needs kernels and shapes; builds tasks and registers
  p.add<InsertTransfers>();  // after lowering: a task that reads another device's register reads a mirror
  p.add<PlanMemory>();       // needs every register's size and slot count
  p.add<CheckPlan>();        // needs the finished plan: refuses one that would stall or not fit
  p.add<PredictStepTime>();  // plays the checked plan (a stalling one would not finish)
  return p;
}

void Pipeline::run(Compilation& c, const std::string& stop_before) const {
  for (const auto& pass : passes_) {
    if (!stop_before.empty() && pass->name() == stop_before) return;
    const auto start = std::chrono::steady_clock::now();
    if (pass->run(c)) verify(c.graph, pass->name());
    if (c.options.time_passes)
      fmt::print(stderr, "ofc: {:<24} {:8.1f} ms  {} nodes, {} tasks\n", pass->name(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(), c.graph.nodes.size(),
                 c.tasks.tasks.size());
  }
}

std::vector<std::string> Pipeline::names() const {
  std::vector<std::string> out;
  for (const auto& pass : passes_) out.push_back(pass->name());
  return out;
}

}  // namespace of::compiler
