// SPDX-License-Identifier: Apache-2.0
// The one streaming entry of ofrun: inference (run.cpp), training and evaluation (train/train.cpp)
// each make their source, sink and snapshot actions, and this makes every other task's action,
// one TaskState per task, runs them as actors and writes the trace and memory report.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "runtime/actors/protocol.h"
#include "runtime/plan_instance.h"
#include "runtime/transport/bootstrap.h"

namespace of::runtime {

// Every task's action: `source` makes each source task's (of this process), `snapshot` each
// snapshot task's (empty: the plan has none, else it is refused), and the sink gets the given
// one; compute tasks get their kernels (prepared now, after the weights are in place, since
// inference kernels may repack them) and transfer tasks their copies. Tasks of other ranks (a
// multi-process run) get none.
using TaskActionMaker = std::function<std::unique_ptr<Action>(const plan::Task& task)>;
using SourceMaker = TaskActionMaker;
std::vector<std::unique_ptr<Action>> actions_for(const PlanInstance& inst, const SourceMaker& source,
                                                 std::unique_ptr<Action> sink, const TaskActionMaker& snapshot,
                                                 int kernel_threads, kernels::GemmBackend gemm, kernels::RunCtx base = {});

struct StreamOptions {
  int threads = 0;  // actor worker threads; 0: one per core
  std::string policy = "sharing";
  double stall_seconds = 0;
  int32_t slot_limit = 0;     // caps every register's slots; 0: the plan's own
  std::string trace_path;     // a Chrome trace of the first `trace_pieces` pieces; empty: none
  int64_t trace_pieces = 0;
  bool memory_report = false;  // print each arena's high-water mark afterwards
  // The CPU test device (runtime/actors/late_action.h): every compute and transfer act completes
  // late, on this many threads (0: off). The results must not change.
  int late_threads = 0;
  // Testing without a GPU (ofrun --emulate-gpus): a plan's GPUs are CPU devices whose compute,
  // collective and transfer acts (the CPU twins) complete late on one thread per GPU, in order,
  // as on its stream; the host's acts as usual. The results must be the CPU plan's, bit for bit.
  bool emulate_gpus = false;
  // A multi-process run (the instance is one rank's): how the ranks meet. `identity` is of's
  // version; the plan's checksum is added here.
  transport::BootstrapOptions boot;
  std::atomic<bool>* failed = nullptr;  // set at the run's first failure (SchedulerOptions::failed)
};

struct StreamResult {
  double seconds = 0;  // from the first message to the last actor's exit
  int64_t acts = 0;
};

// Streams `pieces` pieces; fails naming the plan when a task fails or the run stalls.
StreamResult stream(const PlanInstance& inst, std::vector<std::unique_ptr<Action>>& actions, int64_t pieces, const StreamOptions& o);

}  // namespace of::runtime
