// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/progress.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace of::runtime::train {
namespace {

std::string duration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const auto t = int64_t(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

}  // namespace

TrainSinkAction::TrainSinkAction(ProgressConfig cfg) : cfg_(std::move(cfg)) {
  start_ = last_log_ = last_draw_ = Clock::now();
  last_log_step_ = cfg_.first_piece / cfg_.micro_batches;
}

void TrainSinkAction::act(int64_t piece, const void* const* in, void* const*) {
  sum_ += double(*static_cast<const float*>(in[0]));
  const int64_t global = cfg_.first_piece + piece;
  if ((global + 1) % cfg_.micro_batches != 0) return;
  const double loss = sum_ / cfg_.micro_batches;
  sum_ = 0;
  ++steps_;
  last_step_end_ = Clock::now();
  if (steps_ == 1) first_step_end_ = last_step_end_;
  last_loss_ = loss;
  const int64_t step = (global + 1) / cfg_.micro_batches;  // 1-based, over the whole training
  const bool line = cfg_.log_every > 0 && (step % cfg_.log_every == 0 || step == cfg_.total_steps);
  if (line || cfg_.live) report(step, loss, line);
}

double TrainSinkAction::steady_step_seconds() const {
  if (steps_ < 2) return 0;
  return std::chrono::duration<double>(last_step_end_ - first_step_end_).count() / double(steps_ - 1);
}

void TrainSinkAction::report(int64_t step, double loss, bool line) {
  const Clock::time_point now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? double(steps_ * cfg_.micro_batches * cfg_.batch) / elapsed : 0;
  const double epoch = double(step) / double(cfg_.steps_per_epoch);
  const double eta = steps_ > 0 ? elapsed / double(steps_) * double(cfg_.total_steps - step) : -1;
  const float lr = cfg_.schedule.at(step, cfg_.total_steps, cfg_.steps_per_epoch);
  if (line) {
    const double since = std::chrono::duration<double>(now - last_log_).count();
    const double recent = since > 0 ? double((step - last_log_step_) * cfg_.micro_batches * cfg_.batch) / since : rate;
    last_log_ = now;
    last_log_step_ = step;
    if (cfg_.metrics && write_error_.empty()) {
      const std::string json = fmt::format(
          "{{\"step\": {}, \"epoch\": {:.4f}, \"loss\": {:.9g}, \"lr\": {:.9g}, \"samples_per_s\": {:.1f}, \"elapsed_s\": {:.3f}}}\n", step,
          epoch, loss, lr, recent, elapsed);
      errno = 0;
      // Line-buffered: the write (and a full disk) happens here, not at fclose.
      // A failed flush inside fwrite only sets the stream's error flag: test it too.
      if (std::fwrite(json.data(), 1, json.size(), cfg_.metrics) != json.size() || std::fflush(cfg_.metrics) != 0 ||
          std::ferror(cfg_.metrics)) {
        write_error_ = errno ? std::strerror(errno) : "write failed";
        if (cfg_.stop) cfg_.stop->store(true, std::memory_order_relaxed);
      }
    }
    if (!cfg_.live) {
      fmt::print(stderr, "step {}/{}  epoch {:.2f}  loss {:.4f}  lr {:.4g}  {:.0f} samples/s  ETA {}\n", step, cfg_.total_steps, epoch,
                 loss, lr, recent, duration(eta));
      return;
    }
  }
  // At most ten redraws a second: a terminal is slower than a small model.
  if (cfg_.live && (std::chrono::duration<double>(now - last_draw_).count() >= 0.1 || step == cfg_.total_steps)) {
    last_draw_ = now;
    drawn_ = true;
    fmt::print(stderr, "\r\033[Kstep {}/{}  epoch {:.2f}  loss {:.4f}  {:.0f} samples/s  ETA {}", step, cfg_.total_steps, epoch, loss,
               rate, duration(eta));
    std::fflush(stderr);
  }
}

void TrainSinkAction::finish() {
  if (drawn_) fmt::print(stderr, "\n");
  drawn_ = false;
}

}  // namespace of::runtime::train
