// SPDX-License-Identifier: Apache-2.0
#include "compiler/ir/graph.h"

#include <fmt/core.h>

#include <cstring>

#include "common/error.h"

namespace of::compiler {

ValueId Graph::add_value(std::string name) {
  values.push_back(Value{.name = std::move(name)});
  return ValueId(values.size() - 1);
}

ValueId append_node(Graph& g, std::string name, std::string op, std::string kernel, Attrs attrs, std::vector<ValueId> inputs,
                    TensorDesc desc) {
  const auto id = NodeId(g.nodes.size());
  const ValueId out = g.add_value(name);
  Value& v = g.values[size_t(out)];
  v.desc = std::move(desc);
  v.known = true;
  v.producer = id;
  for (ValueId in : inputs) g.values[size_t(in)].consumers.push_back(id);
  g.nodes.push_back(Node{.name = std::move(name), .op_type = std::move(op), .inputs = inputs, .outputs = {out},
                         .kernel = std::move(kernel), .kernel_attrs = std::move(attrs), .runtime_inputs = inputs});
  return out;
}

void set_scalar(Value& v, float x) {
  v.desc = TensorDesc{{}, DType::f32};
  v.known = true;
  v.data = std::vector<uint8_t>(4);
  std::memcpy(v.data->data(), &x, 4);
}

void remove_nodes(Graph& g, const std::vector<bool>& dead) {
  std::vector<NodeId> new_id(g.nodes.size(), -1);
  std::vector<Node> kept;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!dead[n]) {
      new_id[n] = NodeId(kept.size());
      kept.push_back(std::move(g.nodes[n]));
    }
  g.nodes = std::move(kept);
  for (Node& node : g.nodes)
    if (node.forward >= 0) node.forward = new_id[size_t(node.forward)];
  for (Node& node : g.nodes)
    if (node.recompute_of >= 0) node.recompute_of = new_id[size_t(node.recompute_of)];
  for (Value& v : g.values) {
    if (v.producer >= 0) v.producer = new_id[size_t(v.producer)];
    std::vector<NodeId> consumers;
    for (NodeId c : v.consumers)
      if (new_id[size_t(c)] >= 0) consumers.push_back(new_id[size_t(c)]);
    v.consumers = std::move(consumers);
  }
}

void relink(Graph& g) {
  for (Value& v : g.values) {
    v.producer = -1;
    v.consumers.clear();
  }
  for (NodeId n = 0; n < NodeId(g.nodes.size()); ++n) {
    for (ValueId v : g.nodes[size_t(n)].inputs)
      if (v != kNoValue) g.values[size_t(v)].consumers.push_back(n);
    for (ValueId v : g.nodes[size_t(n)].outputs)
      if (v != kNoValue) g.values[size_t(v)].producer = n;
  }
}

void reorder_nodes(Graph& g, const std::vector<NodeId>& order) {
  OF_ASSERT(order.size() == g.nodes.size(), "reorder_nodes: not a permutation of the nodes");
  std::vector<NodeId> new_id(g.nodes.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) new_id[size_t(order[i])] = NodeId(i);
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (NodeId n : order) nodes.push_back(std::move(g.nodes[size_t(n)]));
  g.nodes = std::move(nodes);
  for (Node& node : g.nodes) {
    if (node.forward >= 0) node.forward = new_id[size_t(node.forward)];
    if (node.recompute_of >= 0) node.recompute_of = new_id[size_t(node.recompute_of)];
  }
  relink(g);
}

void verify(const Graph& g, const std::string& after) {
  // The message is formatted only on failure: verify runs after every pass over graphs of millions
  // of nodes, and a message may name a value only once its id is known to be in range.
  auto check = [&](bool ok, auto&& what) {
    if (!ok) internal_error(__FILE__, __LINE__, fmt::format("graph invalid after pass '{}': {}", after, what()));
  };
  const auto n_values = ValueId(g.values.size());
  auto in_range = [&](ValueId v) { return v >= 0 && v < n_values; };
  std::vector<bool> available(g.values.size(), false);
  for (ValueId v = 0; v < n_values; ++v)
    available[v] = g.values[v].producer < 0;
  for (NodeId n = 0; n < NodeId(g.nodes.size()); ++n) {
    const Node& node = g.nodes[n];
    for (ValueId v : node.inputs) {
      if (v == kNoValue) continue;
      check(in_range(v), [&] { return fmt::format("node '{}' input id {} out of range", node.name, v); });
      check(available[v], [&] { return fmt::format("node '{}' reads '{}' before it is produced", node.name, g.values[v].name); });
    }
    for (ValueId v : node.control_inputs) {
      check(in_range(v), [&] { return fmt::format("node '{}' control input id {} out of range", node.name, v); });
      check(available[v] && g.values[v].producer >= 0,
            [&] { return fmt::format("node '{}' waits for '{}', which no earlier node produces", node.name, g.values[v].name); });
    }
    for (ValueId v : node.outputs) {
      check(in_range(v), [&] { return fmt::format("node '{}' output id {} out of range", node.name, v); });
      check(g.values[v].producer == n,
            [&] { return fmt::format("value '{}' does not name node '{}' as producer", g.values[v].name, node.name); });
      available[v] = true;
    }
  }
  for (ValueId v : g.outputs) check(in_range(v) && available[v], [] { return std::string("graph output never produced"); });
}

}  // namespace of::compiler
