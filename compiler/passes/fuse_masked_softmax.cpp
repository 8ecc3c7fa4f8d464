// SPDX-License-Identifier: Apache-2.0
// fuse-masked-softmax: afterwards no Where(cond, -inf, x) (or Where(cond, x, -inf)) whose only
// reader is a Softmax along the last axis is left where cond, leading 1s dropped, is x's last
// dims: one of.MaskedSoftmax node computes both (kernels/rules.h, masked_softmax). That is how
// torch exports attention written by hand, `att.masked_fill(mask == 0, float('-inf'))` and then
// `F.softmax(att, dim=-1)` (nanoGPT, minGPT): the fused act writes no masked copy of the scores,
// and the backward pass is one act where it was softmax_grad and Where's gradient (bit for bit
// the same numbers). Runs after infer-shapes (it needs shapes, and lowers the node itself) and
// before autodiff, which then takes the fused op's gradient rule.
#include <cmath>

#include "compiler/ops/ops.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/pattern.h"

namespace of::compiler {
namespace {

bool minus_inf(const Graph& g, ValueId v) {
  const std::optional<float> s = pattern::scalar(g, v);
  return s && std::isinf(*s) && *s < 0;
}

}  // namespace

bool FuseMaskedSoftmax::run(Compilation& c) {
  Graph& g = c.graph;
  std::vector<bool> dead(g.nodes.size(), false);
  bool changed = false;
  for (NodeId w = 0; w < NodeId(g.nodes.size()); ++w) {
    const Node& where = g.nodes[size_t(w)];
    if (where.op_type != "Where" || !where.domain.empty() || where.kernel != "where" || where.inputs.size() != 3 || where.outputs.size() != 1)
      continue;
    const ValueId cond = where.inputs[0];
    const bool masked = minus_inf(g, where.inputs[1]);  // Where(cond, -inf, x): masked where cond
    if (!masked && !minus_inf(g, where.inputs[2])) continue;
    const ValueId x = where.inputs[masked ? 2 : 1];
    if (cond == kNoValue || x == kNoValue) continue;
    const Shape& xs = g.values[size_t(x)].desc.shape;
    // x is not broadcast (the Where's output is x's shape), and the op's own shape rule holds.
    if (g.values[size_t(cond)].desc.dtype != DType::bool_ || xs != g.values[size_t(where.outputs[0])].desc.shape ||
        !masked_softmax_fits(xs, g.values[size_t(cond)].desc.shape))
      continue;
    const NodeId s = pattern::only_reader(g, where.outputs[0], "Softmax");
    if (s < 0) continue;
    Node& softmax = g.nodes[size_t(s)];
    if (softmax.kernel != "softmax" || softmax.kernel_attrs.get_int("axis", -1) != int64_t(xs.size()) - 1) continue;
    std::string name = softmax.name;  // "/attn/Softmax" -> "/attn/MaskedSoftmax", so ofdump shows what was fused
    const size_t at = name.rfind("Softmax");
    softmax.name = at == std::string::npos ? name + "/MaskedSoftmax" : name.insert(at, "Masked");
    softmax.op_type = "MaskedSoftmax";
    softmax.domain = "of";
    softmax.attrs = {};
    softmax.attrs.set_int("masked", masked);
    softmax.kernel = "masked_softmax";
    softmax.kernel_attrs = softmax.attrs;
    softmax.inputs = {x, cond};
    softmax.runtime_inputs = {x, cond};
    softmax.runtime_views.clear();
    g.values[size_t(x)].consumers.push_back(s);
    g.values[size_t(cond)].consumers.push_back(s);
    dead[size_t(w)] = true;  // removing it also drops it from its inputs' readers
    changed = true;
  }
  if (!changed) return false;
  remove_nodes(g, dead);
  return true;
}

}  // namespace of::compiler
