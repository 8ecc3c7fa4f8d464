// SPDX-License-Identifier: Apache-2.0
// Gradient clipping by the global norm, as torch.nn.utils.clip_grad_norm_(params, max_norm) does
// between backward() and step(): the 2-norm of all trained gradients together, then every
// gradient times min(1, max_norm / (norm + 1e-6)). Written as ordinary nodes (a product and a sum
// per gradient, their sums added, sqrt, the ratio), so that SBP places them: a split or
// partial-sum gradient's squares sum to partial sums, and one scalar is reduced. Also clipping by
// value, torch.nn.utils.clip_grad_value_: each element clamped to [-v, v] (a Clip, which SBP
// places after a partial sum's reduction: clamping is not linear).
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace of::compiler {

// The clipped gradients of `grads` (each a trained weight's gradient for one optimizer step, after
// micro-batch accumulation), in their order. `weights[i]` names grads[i]'s nodes.
std::vector<ValueId> clip_grad_norm(Graph& g, const std::vector<ValueId>& weights, const std::vector<ValueId>& grads,
                                    double max_norm);

// The gradients of `grads` clamped to [-clip_value, clip_value], as clip_grad_norm takes them.
std::vector<ValueId> clip_grad_value(Graph& g, const std::vector<ValueId>& weights, const std::vector<ValueId>& grads,
                                     double clip_value);

}  // namespace of::compiler
