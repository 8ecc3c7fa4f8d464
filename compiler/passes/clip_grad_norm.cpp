// SPDX-License-Identifier: Apache-2.0
#include "compiler/passes/clip_grad_norm.h"

#include <string>

namespace of::compiler {
namespace {

ValueId scalar_constant(Graph& g, const std::string& name, float x) {
  const ValueId v = g.add_value(name);
  set_scalar(g.values[size_t(v)], x);
  return v;
}

// A node of the clipping that joins the stage and devices of the node `with` (a gradient's
// producer): these are backward-pass work, not forward ops to cut stages by.
ValueId add(Graph& g, NodeId with, std::string name, std::string op, std::string kernel, Attrs attrs,
            std::vector<ValueId> inputs, TensorDesc desc) {
  const ValueId out = append_node(g, std::move(name), std::move(op), std::move(kernel), std::move(attrs), std::move(inputs),
                                  std::move(desc));
  Node& n = g.nodes.back();
  n.forward = with < 0 ? -1 : (g.nodes[size_t(with)].forward >= 0 ? g.nodes[size_t(with)].forward : with);
  n.slots = 1;  // once per optimizer step, read before the next step's gradients exist
  return out;
}

}  // namespace

std::vector<ValueId> clip_grad_norm(Graph& g, const std::vector<ValueId>& weights, const std::vector<ValueId>& grads,
                                    double max_norm) {
  const TensorDesc scalar{{}, DType::f32};
  // Each gradient's sum of squares; then their sum, added pairwise so that partial sums stay
  // partial (an addition is linear) until the one square root.
  std::vector<ValueId> sums;
  std::vector<NodeId> made_by;
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string& name = g.values[size_t(weights[i])].name;
    const NodeId by = g.values[size_t(grads[i])].producer;
    const TensorDesc desc = g.values[size_t(grads[i])].desc;
    ValueId s = add(g, by, "clip_grad_norm/" + name + "/square", "Mul", "mul", {}, {grads[i], grads[i]}, desc);
    if (!desc.shape.empty()) {
      Attrs a;
      std::vector<int64_t> axes(desc.shape.size());
      for (size_t k = 0; k < axes.size(); ++k) axes[k] = int64_t(k);
      a.set_ints("axes", axes);
      a.set_int("keepdims", 0);
      a.set_float("divisor", 1.0f);
      s = add(g, by, "clip_grad_norm/" + name + "/sum", "ReduceSum", "reduce_sum", std::move(a), {s}, scalar);
    }
    sums.push_back(s);
    made_by.push_back(by);
  }
  const NodeId last = made_by.empty() ? -1 : made_by.back();
  for (size_t level = 0; sums.size() > 1; ++level) {
    std::vector<ValueId> next;
    for (size_t i = 0; i + 1 < sums.size(); i += 2)
      next.push_back(add(g, last, "clip_grad_norm/total/" + std::to_string(level) + "/" + std::to_string(i / 2), "Add", "add", {},
                         {sums[i], sums[i + 1]}, scalar));
    if (sums.size() % 2) next.push_back(sums.back());
    sums = std::move(next);
  }
  // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to at most 1, multiplied always.
  const ValueId norm = add(g, last, "clip_grad_norm/norm", "Sqrt", "sqrt", {}, {sums[0]}, scalar);
  const ValueId denom = add(g, last, "clip_grad_norm/norm_eps", "Add", "add", {},
                            {norm, scalar_constant(g, "clip_grad_norm/eps", 1e-6f)}, scalar);
  const ValueId ratio = add(g, last, "clip_grad_norm/ratio", "Div", "div", {},
                            {scalar_constant(g, "clip_grad_norm/max_norm", float(max_norm)), denom}, scalar);
  const ValueId coef = add(g, last, "clip_grad_norm/coef", "Min", "min", {}, {ratio, scalar_constant(g, "clip_grad_norm/one", 1.0f)},
                           scalar);
  std::vector<ValueId> clipped;
  for (size_t i = 0; i < grads.size(); ++i)
    clipped.push_back(add(g, made_by[i], "clip_grad_norm/" + g.values[size_t(weights[i])].name, "Mul", "mul", {}, {grads[i], coef},
                          g.values[size_t(grads[i])].desc));
  return clipped;
}

std::vector<ValueId> clip_grad_value(Graph& g, const std::vector<ValueId>& weights, const std::vector<ValueId>& grads,
                                     double clip_value) {
  std::vector<ValueId> clipped;
  for (size_t i = 0; i < grads.size(); ++i) {
    Attrs a;
    a.set_float("min", -float(clip_value));
    a.set_float("max", float(clip_value));
    clipped.push_back(add(g, g.values[size_t(grads[i])].producer, "clip_grad_value/" + g.values[size_t(weights[i])].name, "Clip",
                          "clip", std::move(a), {grads[i]}, g.values[size_t(grads[i])].desc));
  }
  return clipped;
}

}  // namespace of::compiler
