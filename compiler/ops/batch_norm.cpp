// SPDX-License-Identifier: Apache-2.0
// BatchNormalization, inference form: Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_batch_norm(OpCtx& c) {
  c.expect_arity(5, 5, 3);
  if (c.attrs().get_int("training_mode", 0) != 0)
    c.fail("training_mode = 1 is not supported (inference only; export the model in eval mode)");
  for (size_t i = 1; i < c.num_outputs(); ++i)
    if (c.node().outputs[i] != kNoValue)
      c.fail("has {} outputs; the training outputs (running mean and variance) are not supported", c.num_outputs());
  for (size_t i = 0; i < 5; ++i) c.expect_float(i);
  const Shape& x = c.in(0).shape;
  if (x.size() < 2) c.fail("input 0 (X) has shape {}, expected rank >= 2 [N,C,...]", shape_str(x));
  static constexpr const char* kNames[] = {"X", "scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    if (c.in(i).shape != Shape{x[1]})
      c.fail("input {} ({}) has shape {}, expected [{}] (the channels of input 0 {})", i, kNames[i],
             shape_str(c.in(i).shape), x[1], shape_str(x));
  c.out(0) = c.in(0);
}

void lower_batch_norm(OpCtx& c) {
  Attrs a;
  a.set_float("epsilon", c.attrs().get_float("epsilon", 1e-5f));
  c.set_kernel("batch_norm", std::move(a));
}

}  // namespace

OpDef batch_norm_def() { return {"BatchNormalization", infer_batch_norm, lower_batch_norm}; }

}  // namespace of::compiler
