// SPDX-License-Identifier: Apache-2.0
// recompute (ofc --recompute): afterwards the backward pass reads no activation that a cheap op
// can make again from what the backward pass keeps anyway; a clone of that op makes it there.
//
// Which activations (selective recompute, as Megatron-LM's, not torch.utils.checkpoint's
// segments): a forward op is cheap when its work is linear in its output (everything but
// GEMMs, convolutions and recurrent layers: element-wise ops, normalisations, softmax, copies,
// pooling). An activation the backward pass reads is recomputed when its producer is cheap and
// each tensor the producer reads is a weight or constant, an activation the backward pass keeps,
// or an activation nothing in the backward pass reads that is recomputable in the same way (a
// chain, at most kMaxChain ops), unless it is far smaller than what its producer reads (saved
// statistics: worth_recomputing). A kept activation stays kept: a clone never reads another
// recomputed one, so recomputing a layer never starts by recomputing every layer before it (a
// residual stream). What that buys, measured in the note: LayerNorm's and GELU's outputs (their
// inputs are kept for their own gradients), BatchNorm-then-ReLU pairs (the convolution's output
// is kept for BatchNorm's gradient), but not a ReLU after a GEMM (ReLU's gradient reads the output
// itself) nor a softmax after a scaled product (the scores would have to be kept instead).
//
// When: a clone reads only what the forward pass made, so the actor runtime would run it at once;
// it waits instead (a control input) for the last gradient its earliest reader needs, so that it
// runs when the backward pass reaches it, and its output lives only from there to its last reader.
// A clone some reader of which needs no gradient (the loss's own backward) waits for nothing.
//
// Same numbers: a clone is its op with the same kernel, attributes and inputs (parallelize gives
// it the original's signature), so it computes the same bits; a Dropout keys its mask by the
// original node (its kernel attributes), and BatchNorm's running statistics are updated by the
// separate update node, which reads the original's batch statistics: recomputing BatchNorm does not
// update them twice.
#include <algorithm>
#include <map>

#include "compiler/parallel/cost_model.h"
#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

constexpr int kMaxChain = 4;

bool forward_node(const Node& n) { return n.forward < 0 && n.inplace.empty() && n.recompute_of < 0; }
bool backward_node(const Node& n) { return n.forward >= 0 && n.inplace.empty() && n.recompute_of < 0; }

// Work linear in the output, and an op that computes from streamed activations (a node reading
// only weights, an nn.Linear weight's Transpose, is not an activation's producer to clone).
bool cheap(const Graph& g, const Node& n) {
  if (n.runtime_inputs.empty() || n.outputs.empty() || n.kernel.empty()) return false;
  double out = 0;
  for (ValueId v : n.outputs) out += double(numel(g.values[size_t(v)].desc.shape));
  if (flops_of(g, n) > out) return false;
  return std::any_of(n.runtime_inputs.begin(), n.runtime_inputs.end(), [&](ValueId v) {
    return g.values[size_t(v)].producer >= 0 || g.values[size_t(v)].graph_input;
  });
}

// A saved output far smaller than what its producer reads (BatchNorm's and LayerNorm's saved
// statistics: a value per channel or row) is kept: it saves almost nothing, and recomputing it
// would make its producer's clone run (and hold its large output) only for it.
constexpr double kKeepRatio = 16;
bool worth_recomputing(const Graph& g, const Node& n, ValueId v) {
  double largest_input = 0;
  for (ValueId u : n.runtime_inputs) largest_input = std::max(largest_input, double(g.values[size_t(u)].desc.bytes()));
  return double(g.values[size_t(v)].desc.bytes()) * kKeepRatio >= largest_input;
}

class Recomputer {
 public:
  explicit Recomputer(Graph& g) : g_(g), saved_(g.values.size(), false), recomputed_(g.values.size(), false),
                                  chain_(g.values.size(), 0), clone_of_(g.nodes.size(), -1) {}
  bool run();

 private:
  void choose();
  NodeId clone(NodeId original);
  ValueId gate_of(NodeId b, NodeId bound, int depth = 0) const;
  void reorder();

  Graph& g_;
  std::vector<bool> saved_;       // per value: a forward activation a backward node reads
  std::vector<bool> recomputed_;  // per value: saved, and its backward readers read a clone's
  std::vector<int> chain_;        // per value: not saved but recomputable by this many ops (0: no)
  std::vector<NodeId> clone_of_;  // per original node: its clone, or -1
  std::vector<NodeId> clones_;    // in the order made (a clone's input clones come first)
};

void Recomputer::choose() {
  for (const Node& n : g_.nodes)
    if (backward_node(n))
      for (ValueId v : n.runtime_inputs) {
        const NodeId p = g_.values[size_t(v)].producer;
        if (p >= 0 && forward_node(g_.nodes[size_t(p)])) saved_[size_t(v)] = true;
      }
  // In order: what a producer may read is known when its turn comes.
  for (const Node& n : g_.nodes) {
    if (!forward_node(n) || !cheap(g_, n)) continue;
    int depth = 1;
    bool ok = true;
    for (ValueId u : n.runtime_inputs) {
      const Value& in = g_.values[size_t(u)];
      if (in.producer < 0 && !in.graph_input) continue;  // a weight or constant
      if (saved_[size_t(u)] && !recomputed_[size_t(u)]) continue;   // kept anyway
      if (saved_[size_t(u)] || chain_[size_t(u)] == 0) { ok = false; break; }
      depth = std::max(depth, chain_[size_t(u)] + 1);
    }
    if (!ok || depth > kMaxChain) continue;
    for (ValueId v : n.outputs) {
      if (saved_[size_t(v)]) recomputed_[size_t(v)] = worth_recomputing(g_, n, v);
      else chain_[size_t(v)] = depth;
    }
  }
}

NodeId Recomputer::clone(NodeId original) {
  if (clone_of_[size_t(original)] >= 0) return clone_of_[size_t(original)];
  Node x = g_.nodes[size_t(original)];
  for (ValueId& u : x.runtime_inputs) {
    const NodeId p = g_.values[size_t(u)].producer;
    if (p < 0 || (!recomputed_[size_t(u)] && chain_[size_t(u)] == 0)) continue;
    const NodeId c = clone(p);
    const Node& src = g_.nodes[size_t(p)];
    const ValueId again = g_.nodes[size_t(c)].outputs[size_t(std::find(src.outputs.begin(), src.outputs.end(), u) - src.outputs.begin())];
    std::replace(x.inputs.begin(), x.inputs.end(), u, again);
    u = again;
  }
  x.name = "recompute/" + x.name;
  x.forward = original;
  x.recompute_of = original;
  const auto id = NodeId(g_.nodes.size());
  for (ValueId& v : x.outputs) {
    const Value old = g_.values[size_t(v)];
    const ValueId nv = g_.add_value(old.name + "/recomputed");
    g_.values[size_t(nv)].desc = old.desc;
    g_.values[size_t(nv)].known = old.known;
    g_.values[size_t(nv)].producer = id;
    v = nv;
  }
  g_.nodes.push_back(std::move(x));
  clone_of_[size_t(original)] = id;
  clones_.push_back(id);
  return id;
}

// The gradient backward node `b` waits for last among those made before node `bound`; for a node
// that reads none (autodiff's Reshape of an activation for a weight gradient's GEMM), the
// earliest its readers wait for, made before it (so that the clone still goes before `b` in node
// order). -1: none.
ValueId Recomputer::gate_of(NodeId b, NodeId bound, int depth) const {
  ValueId best = -1;
  const Node& n = g_.nodes[size_t(b)];
  for (ValueId v : n.runtime_inputs) {
    const NodeId p = g_.values[size_t(v)].producer;
    if (p >= 0 && p < bound && backward_node(g_.nodes[size_t(p)]) && (best < 0 || p > g_.values[size_t(best)].producer)) best = v;
  }
  if (best >= 0 || depth == kMaxChain) return best;
  for (ValueId out : n.outputs)
    for (NodeId r : g_.values[size_t(out)].consumers) {
      const ValueId w = gate_of(r, std::min(bound, b), depth + 1);
      if (w < 0) return -1;
      if (best < 0 || g_.values[size_t(w)].producer < g_.values[size_t(best)].producer) best = w;
    }
  return best;
}

// Clones go right before their first reader, after the gradient they wait for; then ids are
// renumbered and links rebuilt.
void Recomputer::reorder() {
  const auto originals = NodeId(g_.nodes.size() - clones_.size());
  // Per clone (latest made first: readers of a clone are made after it): the original node it
  // must precede, and the gradient it waits for (-2 while unknown, -1: none).
  std::map<NodeId, NodeId> before;
  std::map<NodeId, ValueId> wait;
  std::map<ValueId, std::vector<NodeId>> readers;
  for (NodeId n = 0; n < NodeId(g_.nodes.size()); ++n)
    for (ValueId v : g_.nodes[size_t(n)].runtime_inputs) readers[v].push_back(n);
  for (auto it = clones_.rbegin(); it != clones_.rend(); ++it) {
    const NodeId c = *it;
    NodeId first = originals;
    ValueId gate = -2;
    bool free = false;  // some reader needs no gradient: waiting could deadlock, so the clone does not
    for (ValueId v : g_.nodes[size_t(c)].outputs)
      for (NodeId r : readers[v]) {
        const NodeId at = r < originals ? r : before[r];
        first = std::min(first, at);
        const ValueId w = r < originals ? gate_of(r, r) : wait[r];
        if (w < 0) {
          free = true;
          continue;
        }
        if (gate < 0 || g_.values[size_t(w)].producer < g_.values[size_t(gate)].producer) gate = w;
      }
    before[c] = first;
    wait[c] = free || gate < 0 ? -1 : gate;
    if (wait[c] >= 0) g_.nodes[size_t(c)].control_inputs = {wait[c]};
  }
  std::vector<NodeId> order;
  std::map<NodeId, std::vector<NodeId>> ahead;  // original -> clones emitted right before it, in made order
  for (NodeId c : clones_) ahead[before[c]].push_back(c);
  for (NodeId n = 0; n < originals; ++n) {
    for (NodeId c : ahead[n]) order.push_back(c);
    order.push_back(n);
  }
  for (NodeId c : ahead[originals]) order.push_back(c);  // read by nothing: cannot happen, kept for safety
  reorder_nodes(g_, order);
}

bool Recomputer::run() {
  choose();
  const auto originals = NodeId(g_.nodes.size());
  for (NodeId b = 0; b < originals; ++b) {
    if (!backward_node(g_.nodes[size_t(b)])) continue;
    for (size_t k = 0; k < g_.nodes[size_t(b)].runtime_inputs.size(); ++k) {
      const ValueId v = g_.nodes[size_t(b)].runtime_inputs[k];
      if (!recomputed_[size_t(v)]) continue;
      const NodeId p = g_.values[size_t(v)].producer;
      const NodeId c = clone(p);  // may grow g_.nodes: index afresh below
      const Node& src = g_.nodes[size_t(p)];
      const ValueId again = g_.nodes[size_t(c)].outputs[size_t(std::find(src.outputs.begin(), src.outputs.end(), v) - src.outputs.begin())];
      Node& reader = g_.nodes[size_t(b)];
      reader.runtime_inputs[k] = again;
      std::replace(reader.inputs.begin(), reader.inputs.end(), v, again);
    }
  }
  if (clones_.empty()) return false;
  reorder();
  return true;
}

}  // namespace

bool Recompute::run(Compilation& c) {
  if (!c.options.recompute) return false;
  return Recomputer(c.graph).run();
}

}  // namespace of::compiler
