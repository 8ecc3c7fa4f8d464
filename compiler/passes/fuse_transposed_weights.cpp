// SPDX-License-Identifier: Apache-2.0
// fuse-transposed-weights: afterwards no MatMul(A, Transpose(W)) of a 2-D W is left where A has
// rank 2 or more: torch exports nn.Linear on 3-D input so (x @ W^T, W as torch stores it,
// [out, in]). One of.MatMulTransB node reads W itself and the kernel reads it transposed, so a
// training step no longer copies every such weight into its transpose (and its gradient back)
// as tasks of their own. The Transpose stays only if something else reads its output. Runs
// after infer-shapes (it needs the shapes and lowers the node itself) and before autodiff, which
// then takes of.MatMulTransB's gradient rule.
#include <algorithm>

#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

bool swaps_two_dims(const Graph& g, const Node& t) {
  if (t.op_type != "Transpose" || !t.domain.empty() || t.kernel != "transpose" || t.inputs.size() != 1 || t.outputs.size() != 1)
    return false;
  if (g.values[size_t(t.inputs[0])].desc.shape.size() != 2) return false;
  const std::vector<int64_t> perm = t.attrs.get_ints("perm", {1, 0});
  return perm == std::vector<int64_t>{1, 0};
}

}  // namespace

bool FuseTransposedWeights::run(Compilation& c) {
  Graph& g = c.graph;
  std::vector<bool> dead(g.nodes.size(), false);
  bool changed = false;
  for (NodeId m = 0; m < NodeId(g.nodes.size()); ++m) {
    Node& mm = g.nodes[size_t(m)];
    if (mm.op_type != "MatMul" || !mm.domain.empty() || mm.kernel != "matmul" || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const ValueId a = mm.inputs[0], wt = mm.inputs[1];
    if (a == kNoValue || wt == kNoValue || a == wt || g.values[size_t(a)].desc.shape.size() < 2) continue;
    const NodeId t = g.values[size_t(wt)].producer;
    if (t < 0 || dead[size_t(t)] || !swaps_two_dims(g, g.nodes[size_t(t)])) continue;
    const ValueId w = g.nodes[size_t(t)].inputs[0];
    mm.op_type = "MatMulTransB";
    mm.domain = "of";
    mm.attrs = {};
    mm.kernel = "matmul_tb";
    mm.kernel_attrs = {};
    mm.inputs[1] = w;
    std::replace(mm.runtime_inputs.begin(), mm.runtime_inputs.end(), wt, w);
    std::vector<NodeId>& readers = g.values[size_t(wt)].consumers;
    readers.erase(std::remove(readers.begin(), readers.end(), m), readers.end());
    g.values[size_t(w)].consumers.push_back(m);
    if (readers.empty() && !g.values[size_t(wt)].graph_output) dead[size_t(t)] = true;
    changed = true;
  }
  if (!changed) return false;
  remove_nodes(g, dead);
  return true;
}

}  // namespace of::compiler
