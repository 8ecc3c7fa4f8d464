// SPDX-License-Identifier: Apache-2.0
// Dropout: the identity in inference and evaluation plans, and in training with ratio 0 (how
// models compared step by step with PyTorch are run). Training with ratio > 0 needs a
// counter-based generator keyed by step and element, which is not built yet: refused by name.
#include <cstring>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

float ratio_of(OpCtx& c) {
  if (!c.has_in(1)) return c.attrs().get_float("ratio", 0.5f);
  const std::vector<uint8_t>* d = c.const_data(1);
  if (!d || c.in(1).dtype != DType::f32 || numel(c.in(1).shape) != 1) c.fail("input 1 (ratio) must be a constant f32 scalar");
  float r;
  std::memcpy(&r, d->data(), 4);
  return r;
}

void infer_dropout(OpCtx& c) {
  c.expect_arity(1, 3, 2);
  c.expect_float(0);
  const float ratio = ratio_of(c);
  if (ratio < 0.0f || ratio >= 1.0f) c.fail("ratio {} is outside [0, 1)", ratio);
  if (!c.drop_output_if_unused(1)) c.fail("its mask output is read; only Dropout's first output is supported");
  if (c.training() && ratio > 0.0f)
    // TODO(issue-10): Philox masks keyed by (seed, step, micro-batch, tensor, element).
    c.fail("ratio {} in a training plan: random dropout is not supported yet; train with p=0 (nn.Dropout(0.0)) "
           "or leave it out", ratio);
  c.out(0) = c.in(0);
}

void lower_dropout(OpCtx& c) {
  c.set_kernel("copy");
  c.set_runtime_inputs({0});
}

void grad_dropout(GradCtx& g) {
  if (g.wants(0)) g.add_in_grad(0, g.emit("DropoutGrad", "copy", {g.out_grad(0)}, {}, g.desc(g.in(0))));
}

}  // namespace

OpDef dropout_def() { return {"Dropout", infer_dropout, lower_dropout, grad_dropout}; }

}  // namespace of::compiler
