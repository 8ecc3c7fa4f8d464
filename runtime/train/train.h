// SPDX-License-Identifier: Apache-2.0
// ofrun's training and evaluation entries. A training plan (ofc --train) streams micro-batches
// from a dataset through forward, backward and in-place optimizer updates; its companion
// evaluation plan (<stem>.eval.ofp) streams the test split through the forward pass and sums
// per-sample loss and accuracy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/transport/bootstrap.h"

namespace of::runtime::train {

struct TrainOptions {
  std::string plan_path;
  std::string data;                // --data spec (runtime/data/dataset.h)
  int64_t epochs = 0;              // passes over the data; 0: use steps (neither: one epoch)
  int64_t steps = 0;               // optimizer steps of the whole training (a resumed run included)
  std::optional<uint64_t> seed;    // shuffling; default 0, or the checkpoint's when resuming
  bool shuffle = true;
  bool pad_last = false;           // pad the last partial batch (default: drop it)
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;    // steps; 0: only at the end (and on SIGINT)
  int64_t keep_checkpoints = 2;    // the newest N checkpoints stay
  bool resume = false;             // continue from checkpoint_dir's latest checkpoint, if any
  bool overwrite = false;          // start over in a checkpoint_dir that holds checkpoints
  std::string init_path;           // safetensors with PyTorch-named initial weights
  std::string metrics_path;        // JSON lines, one per logged step
  int64_t log_every = -1;          // -1: 1 with metrics, else 100 (0 on a terminal: live line only)
  bool live = false;               // redraw a progress line (stderr is a terminal)
  bool train = true;               // false: evaluate only
  bool eval = false;               // evaluate after training (or instead of it)
  std::string eval_data;           // default: --data, with idx's test split
  int threads = 0;                 // 0: runtime/thread_counts.h
  int kernel_threads = 0;          // likewise
  std::string policy = "sharing";
  std::string trace_path;          // Chrome trace of the first 10000 pieces
  bool memory_report = false;      // print each arena's high-water mark after training
  double stall_seconds = 0;        // > 0: fail a run in which no task acts for this long
  int late_threads = 0;            // > 0: the CPU test device that completes acts late (stream.h)
  bool emulate_gpus = false;       // a plan for GPUs on this CPU (stream.h)
  std::string gemm = "onednn";     // or "openblas": PyTorch's summation order
  // A multi-process run: this process is rank `rank` (-1: one process runs every rank); the
  // ranks meet as `boot` says. Each rank runs its own tasks; the source's rank streams the data,
  // the sink's logs and writes metrics, the snapshot's writes checkpoints and evaluates.
  int32_t rank = -1;
  transport::BootstrapOptions boot;
};

struct TrainReport {
  int64_t first_step = 0;  // steps done before this run (resumed from)
  int64_t steps = 0;       // steps this run
  int64_t total_steps = 0;
  int64_t samples = 0;
  double seconds = 0;      // streaming time
  double last_loss = 0;
  bool interrupted = false;
  int signal = 0;          // the signal that interrupted the run (SIGINT, SIGTERM, SIGHUP), or 0
  std::string checkpoint;  // the folder saved at the end, if any
  bool reported = true;    // false: this rank runs no sink, so the figures above are not its
  double predicted_step_seconds = 0;  // what ofc predicted (plan.prediction); 0: not predicted
  double steady_step_seconds = 0;     // measured: the mean step after the first; 0: under two steps
};

struct EvalReport {
  int64_t samples = 0;
  double loss = 0;
  double accuracy = -1;    // < 0: the loss is not a classification
  double seconds = 0;
};

struct Report {
  std::optional<TrainReport> train;
  std::optional<EvalReport> eval;
};

// Throws of::Error for bad plans, data, checkpoints or options.
Report run_training(const TrainOptions& options);

}  // namespace of::runtime::train
