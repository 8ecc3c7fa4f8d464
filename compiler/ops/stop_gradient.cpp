// SPDX-License-Identifier: Apache-2.0
// of.StopGradient: torch's `.detach()` inside a model's forward. ONNX has no such op and torch's
// exporter writes `x.detach()` as `x` itself, so a model that stops a gradient (SimSiam's and
// BYOL's targets, a straight-through estimator's `x + (q - x).detach()`, VQ-VAE's codebook
// losses, an actor-critic's advantage) would train through it. scripts/of_export.py writes each
// detach as this op; it passes its input on (a copy) and no gradient back.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_stop_gradient(OpCtx& c) {
  c.expect_arity(1, 1);
  c.out(0) = c.in(0);
}

void lower_stop_gradient(OpCtx& c) { c.set_kernel("copy"); }

// The point of the op: the gradient stops here, as torch's does at a detached tensor.
void grad_stop_gradient(GradCtx&) {}

}  // namespace

OpDef stop_gradient_def() { return {"of.StopGradient", infer_stop_gradient, lower_stop_gradient, grad_stop_gradient}; }

}  // namespace of::compiler
