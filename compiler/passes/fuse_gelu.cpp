// SPDX-License-Identifier: Apache-2.0
// fuse-gelu: afterwards no chain Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5 (what torch
// exports nn.GELU() as below opset 20) is left whose intermediates nothing else reads: one Gelu
// node computes 0.5 x (1 + erf(x / sqrt 2)) instead, one kernel and one gradient kernel where
// there were five and their gradients. The node is named after the Erf it replaces
// ("/mlp/act/Erf" -> "/mlp/act/Gelu"), so ofdump shows what was fused.
#include <algorithm>
#include <cmath>

#include "compiler/passes/pass.h"
#include "compiler/passes/pattern.h"

namespace of::compiler {
using pattern::is_scalar;
using pattern::only_reader;
using pattern::other_input;

bool FuseGelu::run(Compilation& c) {
  Graph& g = c.graph;
  std::vector<bool> dead(g.nodes.size(), false);
  bool changed = false;
  for (NodeId d = 0; d < NodeId(g.nodes.size()); ++d) {
    Node& div = g.nodes[size_t(d)];
    if (div.op_type != "Div" || !div.domain.empty() || div.inputs.size() != 2 || div.outputs.size() != 1) continue;
    const ValueId x = div.inputs[0];
    if (x == kNoValue || !is_scalar(g, div.inputs[1], float(M_SQRT2))) continue;
    const NodeId erf = only_reader(g, div.outputs[0], "Erf");
    if (erf < 0) continue;
    const NodeId add = only_reader(g, g.nodes[size_t(erf)].outputs[0], "Add");
    if (add < 0 || !is_scalar(g, other_input(g.nodes[size_t(add)], g.nodes[size_t(erf)].outputs[0]), 1.0f)) continue;
    const NodeId mul = only_reader(g, g.nodes[size_t(add)].outputs[0], "Mul");
    if (mul < 0 || other_input(g.nodes[size_t(mul)], g.nodes[size_t(add)].outputs[0]) != x) continue;
    const NodeId half = only_reader(g, g.nodes[size_t(mul)].outputs[0], "Mul");
    if (half < 0 || !is_scalar(g, other_input(g.nodes[size_t(half)], g.nodes[size_t(mul)].outputs[0]), 0.5f)) continue;
    const ValueId y = g.nodes[size_t(half)].outputs[0];
    // The Gelu node no longer reads the constant sqrt 2 (the other constants' readers are removed).
    std::vector<NodeId>& readers = g.values[size_t(div.inputs[1])].consumers;
    readers.erase(std::remove(readers.begin(), readers.end(), d), readers.end());
    std::string name = g.nodes[size_t(erf)].name;
    const size_t at = name.rfind("Erf");
    name = at == std::string::npos ? name + "/Gelu" : name.replace(at, 3, "Gelu");
    div.name = name;
    div.op_type = "Gelu";
    div.attrs = {};
    div.inputs = {x};
    div.outputs = {y};
    g.values[size_t(y)].producer = d;
    dead[size_t(erf)] = dead[size_t(add)] = dead[size_t(mul)] = dead[size_t(half)] = true;
    changed = true;
  }
  if (!changed) return false;
  remove_nodes(g, dead);  // also drops the removed nodes from every value's readers
  return true;
}

}  // namespace of::compiler
