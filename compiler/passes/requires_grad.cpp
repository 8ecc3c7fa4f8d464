// SPDX-License-Identifier: Apache-2.0
#include "compiler/passes/requires_grad.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "common/error.h"

namespace of::compiler {
namespace {

// Ops through which torch.nn modules read their parameters.
bool reads_module_parameters(std::string_view op) {
  static constexpr std::array<std::string_view, 15> kOps = {
      "BatchNormalization", "Conv", "ConvTranspose", "Einsum", "GRU", "Gather", "Gemm", "InstanceNormalization",
      "LSTM", "LayerNormalization", "MatMul", "MatMulTransB", "PRelu", "GroupNormalization", "RNN"};
  return std::find(kOps.begin(), kOps.end(), op) != kOps.end();
}

// Ops that move a tensor's elements without arithmetic: a GroupNorm's weight unsqueezed to
// [C,1], an LSTM's weights cut into gates and put together in ONNX's order, a learned memory
// expanded over the batch.
bool moves_elements(std::string_view op) {
  return op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Transpose" || op == "Identity" ||
         op == "Flatten" || op == "Slice" || op == "Split" || op == "Concat" || op == "Expand";
}

constexpr size_t kMaxViews = 16;  // of one tensor, followed through moves_elements
constexpr int kMaxHops = 8;       // back from an addend or factor to the op that made it

// Whether `v` is an initializer, through element moves.
bool from_initializer(const Graph& g, ValueId v) {
  for (int hop = 0; hop <= kMaxHops; ++hop) {
    const Value& val = g.values[size_t(v)];
    if (val.initializer) return true;
    if (val.producer < 0) return false;
    const Node& n = g.nodes[size_t(val.producer)];
    if (!moves_elements(n.op_type) || n.inputs.empty()) return false;
    v = n.inputs[0];
  }
  return false;
}

// Whether `v` is an output of a parameter-reading op, through element moves and the affine
// products and sums a module applies with its own parameters (GroupNorm: InstanceNormalization,
// reshape, times weight, plus bias). A product with a constant (embeddings times sqrt(d)) is not
// one: a positional encoding added to it stays unsure.
bool from_module_op(const Graph& g, ValueId v) {
  for (int hop = 0; hop <= kMaxHops; ++hop) {
    const NodeId p = g.values[size_t(v)].producer;
    if (p < 0) return false;
    const Node& n = g.nodes[size_t(p)];
    if (reads_module_parameters(n.op_type)) return true;
    if (n.inputs.size() == 2 && (n.op_type == "Mul" || n.op_type == "Add")) {
      const bool second_is_parameter = from_initializer(g, n.inputs[1]);
      if (!second_is_parameter && !from_initializer(g, n.inputs[0])) return false;
      v = n.inputs[second_is_parameter ? 0 : 1];
      continue;
    }
    if (!moves_elements(n.op_type) || n.inputs.empty()) return false;
    v = n.inputs[0];
  }
  return false;
}

}  // namespace

bool listed_as_trained(const Graph& g, const std::string& name) {
  return !g.requires_grad || std::binary_search(g.requires_grad->begin(), g.requires_grad->end(), name);
}

void check_requires_grad_list(const Graph& g) {
  if (!g.requires_grad || g.requires_grad->empty()) return;
  for (const Value& v : g.values)
    if (v.initializer && listed_as_trained(g, v.name)) return;
  fail({.file = g.source_file, .field = "metadata 'of.requires_grad'"},
       "names none of the model's initializers (the first: '{}'): was it written for another model?",
       g.requires_grad->front());
}

std::vector<ValueId> unsure_parameters(const Graph& g, const std::vector<ValueId>& weights) {
  std::vector<std::vector<NodeId>> readers(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ValueId v : g.nodes[n].inputs)
      if (v != kNoValue) readers[size_t(v)].push_back(NodeId(n));
  std::vector<ValueId> unsure;
  for (ValueId w : weights) {
    bool sure = false;
    std::vector<ValueId> views{w};  // w and what moves its elements
    for (size_t i = 0; i < views.size() && i < kMaxViews && !sure; ++i)
      for (NodeId r : readers[size_t(views[i])]) {
        const Node& n = g.nodes[size_t(r)];
        if (reads_module_parameters(n.op_type)) {
          sure = true;
        } else if (moves_elements(n.op_type) && !n.outputs.empty()) {
          views.push_back(n.outputs[0]);
        } else if (n.op_type == "Add" || n.op_type == "Mul") {  // a bias, an affine: x W + b, norm(x) * w
          for (ValueId other : n.inputs)
            sure = sure || (other != views[i] && other != kNoValue && from_module_op(g, other));
        }
        if (sure) break;
      }
    if (!sure) unsure.push_back(w);
  }
  return unsure;
}

void mark_padding_rows(Graph& g) {
  for (const auto& [name, index] : g.padding_rows) {
    const Where where{.file = g.source_file, .field = "metadata 'of.padding_idx'"};
    for (Node& n : g.nodes) {
      if (n.op_type != "Gather" || n.inputs.empty() || g.values[size_t(n.inputs[0])].name != name ||
          !g.values[size_t(n.inputs[0])].initializer || n.kernel_attrs.get_int("axis", 0) != 0)
        continue;
      const Shape& table = g.values[size_t(n.inputs[0])].desc.shape;
      if (table.empty() || index >= table[0])
        fail(where, "padding row {} of '{}' is outside its {} rows", index, name, table.empty() ? 0 : table[0]);
      n.kernel_attrs.set_int("padding_idx", index);
    }
  }
}

}  // namespace of::compiler
