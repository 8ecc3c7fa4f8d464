// SPDX-License-Identifier: Apache-2.0
#include "compiler/passes/pattern.h"

#include <cmath>
#include <cstring>

namespace of::compiler::pattern {

std::optional<float> scalar(const Graph& g, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  const Value& val = g.values[size_t(v)];
  const std::vector<uint8_t>* bytes = val.contents();
  if (!bytes || val.graph_input || val.desc.dtype != DType::f32 || bytes->size() != 4) return std::nullopt;
  float x;
  std::memcpy(&x, bytes->data(), 4);
  return x;
}

bool is_scalar(const Graph& g, ValueId v, float want) {
  const std::optional<float> x = scalar(g, v);
  return x && std::fabs(*x - want) <= 1e-6f * std::fabs(want);
}

NodeId only_reader(const Graph& g, ValueId v, const char* op) {
  if (v == kNoValue) return -1;
  const Value& val = g.values[size_t(v)];
  if (val.graph_output || val.consumers.size() != 1) return -1;
  const Node& n = g.nodes[size_t(val.consumers[0])];
  return n.op_type == op && n.domain.empty() && n.outputs.size() == 1 ? val.consumers[0] : -1;
}

ValueId other_input(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : kNoValue;
}

}  // namespace of::compiler::pattern
