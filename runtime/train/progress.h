// SPDX-License-Identifier: Apache-2.0
// The sink of a training run: it receives each piece's loss, averages the micro-batches of a step,
// and reports: a live progress line on a terminal (step, epoch, loss, samples/s, ETA), a plain log
// line every `log_every` steps otherwise, and one JSON object per logged step in the metrics file.
// Reporting happens in the sink's act, off the compute tasks' path; the file is line-buffered.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/lr_schedule.h"
#include "runtime/actors/protocol.h"

namespace of::runtime::train {

struct ProgressConfig {
  int64_t first_piece = 0;
  int32_t micro_batches = 1;
  int64_t batch = 1;
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 1;
  int64_t log_every = 0;    // plain lines / metrics every N steps; 0: never
  bool live = false;        // redraw one line on stderr (a terminal)
  std::FILE* metrics = nullptr;
  LrSchedule schedule;
  // A metrics write that fails (a full disk) stops the run at the next step boundary, as a
  // signal does, so that it can save a checkpoint; train() then reports write_error().
  std::atomic<bool>* stop = nullptr;
};

class TrainSinkAction final : public Action {
 public:
  explicit TrainSinkAction(ProgressConfig cfg);
  void act(int64_t piece, const void* const* in, void* const* out) override;

  int64_t steps_done() const { return steps_; }
  double last_loss() const { return last_loss_; }
  // The mean time of the steps after the first (start-up and the first step's warm-up left out);
  // 0 with fewer than two steps.
  double steady_step_seconds() const;
  // Ends the live line so that what follows starts on its own line.
  void finish();
  // Why writing the metrics file failed ("" if it did not).
  const std::string& write_error() const { return write_error_; }

 private:
  using Clock = std::chrono::steady_clock;
  void report(int64_t step, double loss, bool line);

  ProgressConfig cfg_;
  double sum_ = 0;       // losses of the current step's micro-batches
  int64_t steps_ = 0;    // completed in this run
  double last_loss_ = 0;
  Clock::time_point start_, last_log_, last_draw_;
  Clock::time_point first_step_end_, last_step_end_;
  int64_t last_log_step_ = 0;
  bool drawn_ = false;
  std::string write_error_;
};

}  // namespace of::runtime::train
