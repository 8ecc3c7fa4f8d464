// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/cost_model.h"

#include <algorithm>

namespace of::compiler {

double flops_of(const Graph& g, const Node& n) {
  auto shape = [&](ValueId v) -> const Shape& { return g.values[size_t(v)].desc.shape; };
  const double out = double(numel(shape(n.outputs[0])));
  if (n.kernel == "gemm") return 2.0 * out * double(shape(n.inputs[0])[n.kernel_attrs.get_int("trans_a", 0) ? 0 : 1]);
  if (n.kernel == "matmul" || n.kernel == "matmul_tb") return 2.0 * out * double(shape(n.inputs[0]).back());
  // Convolutions: per output element of the forward pass, in_channels x kernel area multiply-adds
  // (numel(w) / out_channels); both gradients cost the same as the forward pass.
  auto conv = [&](const Shape& y, const Shape& w) {
    return 2.0 * double(numel(y)) * double(numel(w)) / double(std::max<int64_t>(w.empty() ? 1 : w[0], 1));
  };
  if (n.kernel == "conv") return conv(shape(n.outputs[0]), shape(n.inputs[1]));
  if (n.kernel == "conv_grad_data") return conv(shape(n.inputs[0]), shape(n.inputs[1]));     // (dy, w)
  if (n.kernel == "conv_grad_weight") return conv(shape(n.inputs[0]), shape(n.outputs[0]));  // (dy, x) -> dw
  // Recurrent layers: per step and direction, the gates' products with X_t and H_{t-1}
  // (W [D, G*H, I], R [D, G*H, H]); backward through time multiplies by both again and by their
  // transposes for the weight gradients: twice the forward.
  if (n.kernel == "lstm" || n.kernel == "gru" || n.kernel == "lstm_grad" || n.kernel == "gru_grad") {
    const Shape& x = shape(n.inputs[0]);
    const double steps = double(x[0]) * double(x[1]);
    const double f = 2.0 * steps * double(numel(shape(n.inputs[1])) + numel(shape(n.inputs[2])));
    return n.kernel.ends_with("_grad") ? 2.0 * f : f;
  }
  return out;
}

}  // namespace of::compiler
