// SPDX-License-Identifier: Apache-2.0
// ofrun's library entry: load and verify a plan and its weights, bind fed inputs and requested
// outputs, allocate each arena once, run one actor per task, write outputs and the trace.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.h"
#include "runtime/transport/bootstrap.h"

namespace of::runtime {

struct RunOptions {
  std::string plan_path;
  std::vector<std::pair<std::string, std::string>> inputs;   // graph input -> .npy file
  std::vector<std::pair<std::string, std::string>> outputs;  // graph output -> .npy file
  int64_t pieces = 0;        // 0: the plan's default, else as many as the inputs hold
  int32_t slots = 0;         // 0: the plan's slot counts; else at most this many per register
  int threads = 0;           // actor worker threads; 0: runtime/thread_counts.h
  int kernel_threads = 0;    // threads each kernel may use (OpenMP inside oneDNN); 0: runtime/thread_counts.h
  std::string policy = "sharing";
  std::string gemm = "onednn";  // or "openblas" (kernels/kernel.h GemmBackend)
  std::string trace_path;
  bool memory_report = false;  // print each arena's high-water mark after the run
  double stall_seconds = 0;    // > 0: fail a run in which nothing happens for this long (actor_system.h)
  int late_threads = 0;        // > 0: the CPU test device that completes acts late (stream.h)
  bool emulate_gpus = false;   // a plan for GPUs on this CPU (stream.h)
  // A multi-process run: this process is rank `rank` (-1: one process runs every rank). The
  // source's rank reads the inputs, the sink's writes the outputs.
  int32_t rank = -1;
  transport::BootstrapOptions boot;
};

struct RunResult {
  bool reported = true;  // false: this rank ran no sink (the figures are not its)
  int64_t pieces = 0;
  double seconds = 0;  // streaming time: actors started to all done (no loading, no start-up)
  int64_t acts = 0;    // over all tasks
};

// "onednn" or "openblas"; anything else fails naming --gemm.
kernels::GemmBackend gemm_backend(const std::string& name);

// Throws of::Error for bad plans, weights, inputs or a failed run.
RunResult run(const RunOptions& options);

}  // namespace of::runtime
