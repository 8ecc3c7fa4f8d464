// SPDX-License-Identifier: Apache-2.0
// PRelu (nn.PReLU): y = x where x > 0, else slope * x; the slope broadcasts to x one way only
// (torch writes nn.PReLU(C)'s weight [C] as [C, 1, 1] for images, nn.PReLU()'s as [1]). Kernel
// prelu (a broadcasting binary); the gradients from relu's, exact as torch's: with r = relu(x),
// dr = relu_grad(dy, r) (dy where x > 0), dx = dr + slope * (dy - dr) (one of the two terms is
// 0), and dslope = the sum over the broadcast axes of dy * (x - r) (x where x <= 0, else 0).
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_prelu(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  c.expect_float(1);
  const Shape& x = c.in(0).shape;
  if (broadcast_shapes(c, x, c.in(1).shape) != x)
    c.fail("slope {} does not broadcast to input {} (only the slope broadcasts)", shape_str(c.in(1).shape), shape_str(x));
  c.out(0) = c.in(0);
}

void lower_prelu(OpCtx& c) { c.set_kernel("prelu"); }

void grad_prelu(GradCtx& g) {
  const ValueId dy = g.out_grad(0), x = g.in(0), slope = g.in(1);
  const TensorDesc d = g.desc(x);  // a copy: emitting nodes may move the graph's values
  const ValueId r = g.emit("PReluGrad", "relu", {x}, {}, d);
  if (g.wants(0)) {
    const ValueId dr = g.emit("PReluGrad", "relu_grad", {dy, r}, {}, d);
    const ValueId rest = g.emit("PReluGrad", "sub", {dy, dr}, {}, d);
    g.add_in_grad(0, g.emit("PReluGrad", "add", {dr, g.emit("PReluGrad", "mul", {rest, slope}, {}, d)}, {}, d));
  }
  if (g.wants(1)) {
    const ValueId negative = g.emit("PReluGrad", "sub", {x, r}, {}, d);
    g.add_in_grad(1, g.unbroadcast(g.emit("PReluGrad", "mul", {dy, negative}, {}, d), g.desc(slope).shape));
  }
}

}  // namespace

OpDef prelu_def() { return {"PRelu", infer_prelu, lower_prelu, grad_prelu, {}, {sbp_rule("prelu", sbp::elementwise)}}; }

}  // namespace of::compiler
