// SPDX-License-Identifier: Apache-2.0
// The SBP rules of the kernels the training passes add (no ONNX op of their own emits them);
// signatures.cpp gathers them with the ops'.
#pragma once

#include <string>
#include <vector>

#include "compiler/parallel/signatures.h"

namespace of::compiler {

std::vector<KernelSbp> loss_kernel_sbp();       // autodiff.cpp: losses, their gradients, metrics
std::vector<KernelSbp> optimizer_kernel_sbp();  // add_optimizer.cpp: updates, accumulation

// Whether a node of this op_type is an optimizer's update (weight, gradient, state..., lr, step)
// -> (weight', state'...), as add_optimizer.cpp makes them.
bool is_optimizer_update(const std::string& op_type);

inline std::vector<KernelSbp> training_kernel_sbp() {
  std::vector<KernelSbp> all = loss_kernel_sbp();
  for (const KernelSbp& k : optimizer_kernel_sbp()) all.push_back(k);
  return all;
}

}  // namespace of::compiler
