// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules, as ofc --schedule gives them and the plan stores them:
//   constant                          lr every step
//   warmup:steps=W                    linear from lr/W at step 1 to lr at step W, then constant
//   cosine[:warmup=W,min_lr=M]        linear warm-up over W steps, then cosine decay from lr to M
//                                     at the run's last step (ofrun knows the total)
// Steps count from 1, as the optimizer's bias corrections do. The same function gives the same lr
// for a step whether or not the run was resumed in between.
#pragma once

#include <cstdint>
#include <string>

namespace of {

class LrSchedule {
 public:
  // Fails (of::Error naming `spec`) on an unknown kind, key or out-of-range value.
  static LrSchedule parse(const std::string& spec, float base_lr);

  // The rate for optimizer step `step` (1-based) of a run of `total_steps` steps.
  float at(int64_t step, int64_t total_steps) const;

 private:
  enum class Kind { constant, warmup, cosine } kind_ = Kind::constant;
  double base_ = 0, min_ = 0;
  int64_t warmup_ = 0;
};

}  // namespace of
