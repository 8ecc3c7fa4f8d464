// SPDX-License-Identifier: Apache-2.0
// fuse-activations: afterwards no Relu reads the output of a Gemm, Conv or BatchNorm's apply
// (split-batch-norm) that nothing else reads; the producer applies the ReLU itself (kernel
// attribute activation = "relu"). This saves an act, a register and a full pass over memory per
// fused pair (after a training BatchNorm, the one copy of the activation a PyTorch model's
// in-place ReLU keeps).
#include <algorithm>
#include <unordered_map>

#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

bool fusable_producer(const Node& n) {
  return (n.kernel == "gemm" || n.kernel == "conv" || n.kernel == "batch_norm_apply") && !n.kernel_attrs.has("activation");
}

}  // namespace

bool FuseActivations::run(Compilation& c) {
  Graph& g = c.graph;
  std::vector<bool> removed(g.nodes.size(), false);
  std::vector<ValueId> fused_into(g.values.size(), kNoValue);  // a dead intermediate: the Relu's output
  bool changed = false;
  for (NodeId r = 0; r < NodeId(g.nodes.size()); ++r) {
    Node& relu = g.nodes[r];
    if (relu.kernel != "relu") continue;
    const ValueId x = relu.inputs[0];
    const Value& xv = g.values[x];
    if (xv.producer < 0 || xv.graph_output || xv.consumers.size() != 1) continue;
    Node& producer = g.nodes[xv.producer];
    if (!fusable_producer(producer) || producer.outputs.size() != 1) continue;
    // The producer now writes the Relu's output value directly; the intermediate is dead.
    producer.kernel_attrs.set_str("activation", "relu");
    fused_into[size_t(producer.outputs[0])] = relu.outputs[0];
    producer.outputs[0] = relu.outputs[0];
    // The output is the Relu's: so are its slots (a pipeline holds it when the backward pass reads it).
    producer.slots = std::max(producer.slots, relu.slots);
    removed[r] = true;
    changed = true;
  }
  if (!changed) return false;
  std::vector<Node> kept;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!removed[n]) kept.push_back(std::move(g.nodes[n]));
  g.nodes = std::move(kept);
  for (Node& n : g.nodes)  // a node that waited for the intermediate waits for the fused output
    for (ValueId& v : n.control_inputs)
      if (fused_into[size_t(v)] != kNoValue) v = fused_into[size_t(v)];
  relink(g);
  return true;
}

}  // namespace of::compiler
