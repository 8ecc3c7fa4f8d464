// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules, as ofc --schedule gives them and the plan stores them. Each is the
// schedule a PyTorch recipe builds, with that recipe's numbers (test/fixtures/lr_schedules.txt
// holds PyTorch's rates for each; make_lr_schedule_fixture.py says which recipe each spec is):
//
//   constant
//   warmup:steps=W                    transformers' get_constant_schedule_with_warmup
//   cosine[:min_lr=M]                 torch CosineAnnealingLR(T_max=the run, eta_min=M);
//                                     with warmup=W, transformers' get_cosine_schedule_with_warmup
//   linear                            transformers' get_linear_schedule_with_warmup (to 0 at the end)
//   step:size=N[,gamma=G]             torch StepLR (gamma 0.1 by default, as torchvision's recipe)
//   multistep:milestones=A/B/..[,gamma=G]   torch MultiStepLR
//   exponential:gamma=G               torch ExponentialLR
//   polynomial[:power=P,min_lr=M]     torch PolynomialLR(total_iters=the run, power=P); with
//                                     warmup or min_lr, transformers' polynomial decay (lr_end=M)
//   cosine_restarts:t0=N[,t_mult=K,min_lr=M]   torch CosineAnnealingWarmRestarts (SGDR)
//
// Every kind but constant also takes warmup=W and start=S: the first W units go linearly from
// S x lr (default 0, as transformers' warm-ups start) towards lr (torch's LinearLR(start_factor=S,
// total_iters=W)), and the kind's own decay counts from the warm-up's end (as torch's SequentialLR
// starts its second scheduler there). per=step (the default) counts units in optimizer steps;
// per=epoch in epochs, the rate held through each epoch, as torchvision's recipes step their
// scheduler once an epoch.
//
// The rate of optimizer step k (1-based) is the recipe's rate after k-1 scheduler steps, so the
// same function gives the same rate whether or not the run was resumed in between.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace of {

class LrSchedule {
 public:
  // Fails (of::Error naming `spec`) on an unknown kind, key or out-of-range value.
  static LrSchedule parse(const std::string& spec, float base_lr);

  // The rate for optimizer step `step` (1-based) of a run of `total_steps` steps, of which
  // `steps_per_epoch` make one epoch (used by per=epoch).
  float at(int64_t step, int64_t total_steps, int64_t steps_per_epoch) const;

 private:
  enum class Kind { constant, warmup, cosine, linear, step, multistep, exponential, polynomial, cosine_restarts } kind_ = Kind::constant;
  double base_ = 0, min_ = 0, start_ = 0, gamma_ = 1, power_ = 1;
  int64_t warmup_ = 0, size_ = 1, mult_ = 1;  // size_: step's size, or cosine_restarts' first cycle
  std::vector<int64_t> milestones_;
  bool per_epoch_ = false;
};

}  // namespace of
