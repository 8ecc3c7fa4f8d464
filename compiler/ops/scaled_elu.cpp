// SPDX-License-Identifier: Apache-2.0
// Selu (nn.SELU) and Celu (nn.CELU): composites of Elu, whose kernel and gradient (torch's rule
// at 0) serve them. Selu = gamma * Elu(x, alpha); Celu = alpha * Elu(x / alpha, 1), which is x
// for x > 0 and alpha (exp(x / alpha) - 1) below (to rounding: the division and product by alpha).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_same(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  c.out(0) = c.in(0);
}


Attrs alpha(float a) {
  Attrs at;
  at.set_float("alpha", a);
  return at;
}

void expand_selu(ExpandCtx& c) {
  // ONNX's defaults are torch's constants, to float precision.
  const float a = c.attrs().get_float("alpha", 1.67326319217681884765625f), gamma = c.attrs().get_float("gamma", 1.05070102214813232421875f);
  const ValueId elu = c.emit("Elu", {c.input(0)}, alpha(a));
  c.emit("Mul", {elu, c.floats({}, {gamma})}, {}, c.output(0));
}

void expand_celu(ExpandCtx& c) {
  const float a = c.attrs().get_float("alpha", 1.0f);
  if (a == 1.0f) {
    c.emit("Elu", {c.input(0)}, alpha(1.0f), c.output(0));
    return;
  }
  const ValueId scaled = c.emit("Div", {c.input(0), c.floats({}, {a})});
  c.emit("Mul", {c.emit("Elu", {scaled}, alpha(1.0f)), c.floats({}, {a})}, {}, c.output(0));
}

}  // namespace

OpDef selu_def() {
  OpDef d{"Selu", infer_same, lower_composite, nullptr, {real_attr("alpha"), real_attr("gamma")}};
  d.expand = expand_selu;
  return d;
}

OpDef celu_def() {
  OpDef d{"Celu", infer_same, lower_composite, nullptr, {real_attr("alpha", 1e-30, 3.4e38)}};
  d.expand = expand_celu;
  return d;
}

}  // namespace of::compiler
