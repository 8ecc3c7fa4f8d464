// SPDX-License-Identifier: Apache-2.0
#include "common/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/error.h"
#include "common/option_spec.h"

namespace of {
namespace {

constexpr const char* kKinds =
    "constant, warmup:steps=N, cosine[:warmup=N,min_lr=X], linear[:warmup=N], step:size=N[,gamma=G], "
    "multistep:milestones=A/B/...[,gamma=G], exponential:gamma=G, polynomial[:power=P,min_lr=X], "
    "cosine_restarts:t0=N[,t_mult=K,min_lr=X]; all but constant take warmup=N,start=S,per=step|epoch";

// "5/12/20": ascending positive integers.
std::vector<int64_t> parse_milestones(const std::string& text, const std::string& spec) {
  std::vector<int64_t> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find('/', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 1 || (!out.empty() && v <= out.back()))
      throw Error(fmt::format("--schedule '{}': milestones must be ascending positive integers separated by '/' (e.g. 30/60/80), "
                              "not '{}'", spec, text));
    out.push_back(v);
    begin = end + 1;
  }
  return out;
}

}  // namespace

LrSchedule LrSchedule::parse(const std::string& spec, float base_lr) {
  OptionSpec s(spec.empty() ? "constant" : spec, "--schedule");
  LrSchedule out;
  out.base_ = base_lr;
  // Every kind but constant: a linear warm-up and the unit its counts are in.
  auto allow = [&](std::vector<std::string> own) {
    own.insert(own.end(), {"warmup", "start", "per"});
    s.allow(own);
  };
  if (s.kind() == "constant") {
    s.allow({});
  } else if (s.kind() == "warmup") {
    s.allow({"steps", "start", "per"});
    if (!s.has("steps")) throw Error(fmt::format("--schedule '{}': warmup needs steps=N", spec));
    out.kind_ = Kind::warmup;
  } else if (s.kind() == "cosine") {
    allow({"min_lr"});
    out.kind_ = Kind::cosine;
    out.min_ = s.number("min_lr", 0, 0, base_lr);
  } else if (s.kind() == "linear") {
    allow({});
    out.kind_ = Kind::linear;
  } else if (s.kind() == "step") {
    allow({"size", "gamma"});
    if (!s.has("size")) throw Error(fmt::format("--schedule '{}': step needs size=N (torch StepLR's step_size)", spec));
    out.kind_ = Kind::step;
    out.size_ = int64_t(s.number("size", 1, 1, 1e12));
    out.gamma_ = s.number("gamma", 0.1, 0, 1e6);
  } else if (s.kind() == "multistep") {
    allow({"milestones", "gamma"});
    if (!s.has("milestones"))
      throw Error(fmt::format("--schedule '{}': multistep needs milestones=A/B/... (torch MultiStepLR's milestones)", spec));
    out.kind_ = Kind::multistep;
    out.milestones_ = parse_milestones(s.text("milestones", ""), spec);
    out.gamma_ = s.number("gamma", 0.1, 0, 1e6);
  } else if (s.kind() == "exponential") {
    allow({"gamma"});
    if (!s.has("gamma")) throw Error(fmt::format("--schedule '{}': exponential needs gamma=G (torch ExponentialLR's gamma)", spec));
    out.kind_ = Kind::exponential;
    out.gamma_ = s.number("gamma", 1, 0, 1e6);
  } else if (s.kind() == "polynomial") {
    allow({"power", "min_lr"});
    out.kind_ = Kind::polynomial;
    out.power_ = s.number("power", 1, 0, 1e3);
    out.min_ = s.number("min_lr", 0, 0, base_lr);
  } else if (s.kind() == "cosine_restarts") {
    allow({"t0", "t_mult", "min_lr"});
    if (!s.has("t0"))
      throw Error(fmt::format("--schedule '{}': cosine_restarts needs t0=N (torch CosineAnnealingWarmRestarts' T_0)", spec));
    out.kind_ = Kind::cosine_restarts;
    out.size_ = int64_t(s.number("t0", 1, 1, 1e12));
    const double mult = s.number("t_mult", 1, 1, 1e3);
    if (mult != std::floor(mult)) throw Error(fmt::format("--schedule '{}': t_mult must be an integer >= 1, as torch's T_mult", spec));
    out.mult_ = int64_t(mult);
    out.min_ = s.number("min_lr", 0, 0, base_lr);
  } else {
    throw Error(fmt::format("--schedule '{}': unknown schedule '{}' ({})", spec, s.kind(), kKinds));
  }
  if (out.kind_ != Kind::constant) {
    out.warmup_ = int64_t(out.kind_ == Kind::warmup ? s.number("steps", 0, 1, 1e12) : s.number("warmup", 0, 0, 1e12));
    out.start_ = s.number("start", 0, 0, 1);
    const std::string per = s.text("per", "step");
    if (per != "step" && per != "epoch")
      throw Error(fmt::format("--schedule '{}': per must be step or epoch, not '{}'", spec, per));
    out.per_epoch_ = per == "epoch";
  }
  return out;
}

float LrSchedule::at(int64_t step, int64_t total_steps, int64_t steps_per_epoch) const {
  const int64_t unit = per_epoch_ ? std::max<int64_t>(steps_per_epoch, 1) : 1;
  const int64_t t = (std::max<int64_t>(step, 1) - 1) / unit;                    // scheduler steps before this one
  const int64_t total = (std::max<int64_t>(total_steps, 1) + unit - 1) / unit;  // the run, in units
  if (t < warmup_) return float(base_ * (start_ + (1.0 - start_) * double(t) / double(warmup_)));
  const int64_t u = t - warmup_;  // units since the warm-up's end, where the decay starts
  const double span = double(std::max<int64_t>(total - warmup_, 1));
  switch (kind_) {
    case Kind::constant:
    case Kind::warmup:
      return float(base_);
    case Kind::cosine: {
      const double progress = std::min(1.0, double(u) / span);
      return float(min_ + (base_ - min_) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    }
    case Kind::linear:
      return float(base_ * std::max(0.0, (span - double(u)) / span));
    case Kind::step:
      return float(base_ * std::pow(gamma_, double(u / size_)));
    case Kind::multistep: {
      const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), u) - milestones_.begin();
      return float(base_ * std::pow(gamma_, double(passed)));
    }
    case Kind::exponential:
      return float(base_ * std::pow(gamma_, double(u)));
    case Kind::polynomial: {
      const double remaining = std::max(0.0, 1.0 - double(u) / span);
      return float(min_ + (base_ - min_) * std::pow(remaining, power_));
    }
    case Kind::cosine_restarts: {
      // Where u lies in its cycle: cycles of t0, t0*t_mult, t0*t_mult^2, ... units.
      int64_t at = u, length = size_;
      if (mult_ == 1) {
        at = u % length;
      } else {
        while (at >= length) {
          at -= length;
          length *= mult_;
        }
      }
      return float(min_ + (base_ - min_) * 0.5 * (1.0 + std::cos(std::numbers::pi * double(at) / double(length))));
    }
  }
  return float(base_);
}

}  // namespace of
