// SPDX-License-Identifier: Apache-2.0
// The predicted step time of a finished plan: its tasks played through a few training steps
// (or inference pieces) as ofrun streams them, each act costed by the machine's rates
// (common/machine_costs.h, kernels/kernel_work.h).
//
// The play is the actor protocol itself (schemas/task_state.h: what ofrun's actors and ofc's
// deadlock check run), its acts completing when their device has done them:
//  - an act waits for the pieces it reads, a free slot in what it writes, and the weight version
//    it needs (a weight's next version waits for every reader of the current one);
//  - a process has one worker per device (ofrun --threads D with D devices, one kernel thread
//    each: the configuration --calibrate measures); an act runs on the worker that frees first,
//    once its task's act before it has ended. As in CAF's scheduler, workers are not tied to
//    devices: two acts of one device's tasks may run at once (a pipeline stage's forward and
//    backward), and an idle device's worker runs another's acts.
// A step ends when the sink has its last piece, as ofrun's progress counts it. Memory sharing's
// order edges and frames are registers of the plan, so they are played like any other. Snapshot
// tasks act for nothing between saves and cost their overhead. A rank's CPU devices share the
// memory bandwidth and last-level cache: with costs that measured it (MachineCosts::shared_*), an
// act that starts while k other workers of its rank are busy costs its time alone plus
// min(1, k / (shared_cores - 1)) of the way to its time beside every core busy. Not modelled:
// the time a run takes to start.
#pragma once

#include <vector>

#include "common/machine_costs.h"
#include "schemas/plan_model.h"

namespace of::compiler {

struct StepPrediction {
  double step_seconds = 0;           // steady state: the mean of `steps` steps in the middle of the play (0: no sink)
  std::vector<double> busy_seconds;  // per device, per step: the sum of its acts' costs
};

// What the play needs beside the tasks: each tensor's description (indexed as Blob::tensor and
// Variable::tensor: the graph's values in ofc, Plan::tensors in a written plan) and the pieces
// of one step (the micro-batches of a training step; 1 for inference).
struct PlayedPlan {
  const plan::Plan& plan;
  std::vector<TensorDesc> tensors;
  int64_t pieces_per_step = 1;
};

// The cost of one act of `task` (seconds): alone, or (`shared`) with every core of its host busy
// (the shared_* costs; a kernel not measured so is slowed as its kind of work is).
double act_seconds(const PlayedPlan& p, const plan::Task& task, const MachineCosts& costs, bool shared = false);

// `steps` >= 2 steps are measured, after one that fills the pipeline and before one more.
StepPrediction predict_step(const PlayedPlan& p, const MachineCosts& costs, int steps = 2);

}  // namespace of::compiler
