// SPDX-License-Identifier: Apache-2.0
// split-batch-norm: afterwards no node runs batch_norm_train; each is two, batch_norm_stats
// (X -> the saved mean, inverse standard deviation and unbiased variance) and then
// batch_norm_apply (X, scale, bias and those statistics -> Y). The backward pass and the
// running-statistics update read only the statistics, and a task's outputs live as one register:
// as one node, the forward's Y (as large as X) stayed until the backward pass reached the layer,
// though only the next op reads it. PyTorch keeps no such copy (its ReLU after a BatchNorm works
// in place); split, Y is freed once its reader has acted, and fuse-activations can then write a
// following ReLU's output directly. Per device, after parallelize: each device's BatchNorm
// normalizes its own part of the batch with its own statistics, so the pair needs no layout of
// its own. A BatchNorm whose statistics nobody reads, over the same X, scale and bias with the
// same epsilon as one split before it (a recompute clone: the backward pass keeps the original's
// statistics, since recompute never remakes such small outputs), is an apply alone, reading that
// node's statistics: the same bits, without a second pass over X. (The match is by inputs, not
// by Node::recompute_of, which names logical nodes once parallelize has run.)
#include <map>
#include <tuple>

#include "common/error.h"
#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

// Node n (batch_norm_train, X read as views[0] when given) made the apply of statistics
// (mean, invstd). Y is read by the next forward op only (the backward pass reads the
// statistics): the streaming slots, not the ones a pipeline stage keeps for its backward pass.
void make_apply(Node& n, ValueId mean, ValueId invstd, const std::vector<Shape>& views) {
  const ValueId x = n.inputs[0], scale = n.inputs[1], bias = n.inputs[2];
  auto view = [&](size_t k) { return k < views.size() ? views[k] : Shape{}; };
  n.op_type = "BatchNormApply";
  n.kernel = "batch_norm_apply";
  n.kernel_attrs = Attrs{};
  n.inputs = {x, scale, bias, mean, invstd};
  n.runtime_inputs = n.inputs;
  n.runtime_views.clear();
  if (!views.empty()) n.runtime_views = {view(0), view(1), view(2)};
  n.state_inputs.clear();
  n.outputs.resize(1);
  n.slots = 0;
}

}  // namespace

bool SplitBatchNorm::run(Compilation& c) {
  Graph& g = c.graph;
  size_t splits = 0;
  for (const Node& n : g.nodes) splits += n.kernel == "batch_norm_train";
  if (splits == 0) return false;
  std::vector<NodeId> new_id(g.nodes.size(), -1);
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + splits);
  auto read = [&](ValueId v) { return !g.values[size_t(v)].consumers.empty() || g.values[size_t(v)].graph_output; };
  // (X and the shape it is read as, scale, bias, epsilon) of each node split so far -> its saved
  // mean and inverse std.
  std::map<std::tuple<ValueId, Shape, ValueId, ValueId, float>, std::pair<ValueId, ValueId>> stats_of;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.kernel != "batch_norm_train") {
      new_id[i] = NodeId(nodes.size());
      nodes.push_back(std::move(n));
      continue;
    }
    // (X, scale, B, running mean, running var) -> (Y, saved mean, saved invstd, batch variance);
    // the kernel reads the first three (the running statistics are the update's).
    OF_ASSERT(n.inputs.size() == 5 && n.outputs.size() == 4, "batch_norm_train node " + n.name + " is not 5 -> 4");
    const ValueId x = n.inputs[0], scale = n.inputs[1], bias = n.inputs[2];
    const std::vector<Shape> views = n.runtime_views;
    auto view = [&](size_t k) { return k < views.size() ? views[k] : Shape{}; };
    const float epsilon = n.kernel_attrs.get_float("epsilon", 1e-5f);
    const auto key = std::make_tuple(x, view(0), scale, bias, epsilon);
    const auto same = stats_of.find(key);
    if (same != stats_of.end() && !read(n.outputs[1]) && !read(n.outputs[2]) && !read(n.outputs[3])) {
      make_apply(n, same->second.first, same->second.second, views);
      new_id[i] = NodeId(nodes.size());
      nodes.push_back(std::move(n));
      continue;
    }
    stats_of.emplace(key, std::make_pair(n.outputs[1], n.outputs[2]));
    Node stats = n;
    stats.name = n.name + "/stats";
    stats.op_type = "BatchNormStats";
    stats.kernel = "batch_norm_stats";
    stats.kernel_attrs = Attrs{};
    stats.kernel_attrs.set_float("epsilon", epsilon);
    stats.inputs = {x};
    stats.runtime_inputs = {x};
    stats.runtime_views = view(0).empty() ? std::vector<Shape>{} : std::vector<Shape>{view(0)};
    stats.state_inputs.clear();
    stats.outputs = {n.outputs[1], n.outputs[2], n.outputs[3]};
    new_id[i] = NodeId(nodes.size());  // links to the node (a clone's original) go to its first half
    nodes.push_back(std::move(stats));

    make_apply(n, nodes.back().outputs[0], nodes.back().outputs[1], views);
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  for (Node& n : g.nodes) {
    if (n.forward >= 0) n.forward = new_id[size_t(n.forward)];
    if (n.recompute_of >= 0) n.recompute_of = new_id[size_t(n.recompute_of)];
  }
  relink(g);
  return true;
}

}  // namespace of::compiler
