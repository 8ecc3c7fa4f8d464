// SPDX-License-Identifier: Apache-2.0
#include "common/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/error.h"
#include "common/option_spec.h"

namespace of {

LrSchedule LrSchedule::parse(const std::string& spec, float base_lr) {
  OptionSpec s(spec.empty() ? "constant" : spec, "--schedule");
  LrSchedule out;
  out.base_ = base_lr;
  if (s.kind() == "constant") {
    s.allow({});
  } else if (s.kind() == "warmup") {
    s.allow({"steps"});
    if (!s.has("steps")) throw Error(fmt::format("--schedule '{}': warmup needs steps=N", spec));
    out.kind_ = Kind::warmup;
    out.warmup_ = int64_t(s.number("steps", 0, 1, 1e12));
  } else if (s.kind() == "cosine") {
    s.allow({"warmup", "min_lr"});
    out.kind_ = Kind::cosine;
    out.warmup_ = int64_t(s.number("warmup", 0, 0, 1e12));
    out.min_ = s.number("min_lr", 0, 0, base_lr);
  } else {
    throw Error(fmt::format("--schedule '{}': unknown schedule '{}' (constant, warmup:steps=N, cosine[:warmup=N,min_lr=X])", spec, s.kind()));
  }
  return out;
}

float LrSchedule::at(int64_t step, int64_t total_steps) const {
  step = std::max<int64_t>(step, 1);
  if (kind_ != Kind::constant && step <= warmup_) return float(base_ * double(step) / double(warmup_));
  if (kind_ != Kind::cosine) return float(base_);
  const int64_t span = std::max<int64_t>(total_steps - warmup_, 1);
  const double progress = std::min(1.0, double(step - warmup_) / double(span));
  return float(min_ + (base_ - min_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

}  // namespace of
