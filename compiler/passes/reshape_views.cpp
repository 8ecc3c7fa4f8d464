// SPDX-License-Identifier: Apache-2.0
// reshape-views: afterwards no Reshape, Flatten, Squeeze or Unsqueeze copies a streamed tensor on
// its own device: its readers read the tensor it reshaped in place, as a view of the new shape
// (Node::runtime_views, then TaskInput::view in the plan), as torch's view() does. That saves a
// copy per use and the register it filled, and autodiff's reshapes of gradients go the same way.
// Left alone: a reshape whose output leaves the graph, of a weight or constant (persistent
// registers and variables are read whole), or of another device's tensor (boxing). A reshape
// whose output needed more slots (a pipeline stage's backward reads it) gives them to the
// tensor's producer, which its readers now hold instead; the source's register cannot take
// them, so a view of a graph input is made only without.
#include <algorithm>

#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

bool is_view_op(const Node& n) {
  static const char* const kOps[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  return n.domain.empty() && n.kernel == "copy" && std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return n.op_type == op; });
}

}  // namespace

bool ReshapeViews::run(Compilation& c) {
  Graph& g = c.graph;
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<ValueId> now_in(g.values.size(), kNoValue);  // a removed reshape's output: the value it viewed
  bool changed = false;
  for (NodeId id = 0; id < NodeId(g.nodes.size()); ++id) {
    Node& n = g.nodes[size_t(id)];
    if (!is_view_op(n) || n.runtime_inputs.size() != 1 || n.outputs.size() != 1 || !n.inplace.empty()) continue;
    const ValueId in = n.runtime_inputs[0], out = n.outputs[0];
    const Value& vin = g.values[size_t(in)];
    const Value& vout = g.values[size_t(out)];
    if (vout.graph_output || vin.initializer || vin.optimizer_state || vin.data || vin.desc.dtype != vout.desc.dtype ||
        numel(vin.desc.shape) != numel(vout.desc.shape))
      continue;
    if (n.name.find("/boxing/") != std::string::npos) continue;
    const NodeId p = vin.producer;
    if (p >= 0) {
      const Node& producer = g.nodes[size_t(p)];
      if (!producer.inplace.empty() || producer.device != n.device) continue;
    } else if (!vin.graph_input || n.device != 0 || n.slots > 0) {
      continue;
    }
    if (n.slots > 0) {
      Node& producer = g.nodes[size_t(p)];
      producer.slots = std::max(n.slots, producer.slots > 0 ? producer.slots : c.options.slots);
    }
    const Shape view = vout.desc.shape;
    for (NodeId r : std::vector<NodeId>(vout.consumers)) {
      Node& reader = g.nodes[size_t(r)];
      for (size_t k = 0; k < reader.runtime_inputs.size(); ++k) {
        if (reader.runtime_inputs[k] != out) continue;
        reader.runtime_inputs[k] = in;
        if (reader.runtime_views.size() <= k) reader.runtime_views.resize(reader.runtime_inputs.size());
        // A reader with a view of its own (a gradient bucket's pack reads each gradient flat)
        // keeps it: the elements are the same, in the same order.
        if (reader.runtime_views[k].empty()) reader.runtime_views[k] = view;
      }
      std::replace(reader.inputs.begin(), reader.inputs.end(), out, in);
      std::vector<NodeId>& readers = g.values[size_t(in)].consumers;
      if (std::find(readers.begin(), readers.end(), r) == readers.end()) readers.push_back(r);
    }
    g.values[size_t(out)].consumers.clear();
    std::vector<NodeId>& readers = g.values[size_t(in)].consumers;
    readers.erase(std::remove(readers.begin(), readers.end(), id), readers.end());
    now_in[size_t(out)] = in;
    dead[size_t(id)] = true;
    changed = true;
  }
  if (!changed) return false;
  // A node that waited for a reshape's output waits for its producer's.
  for (Node& n : g.nodes)
    for (ValueId& v : n.control_inputs)
      while (now_in[size_t(v)] != kNoValue) v = now_in[size_t(v)];
  remove_nodes(g, dead);
  return true;
}

}  // namespace of::compiler
