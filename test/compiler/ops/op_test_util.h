// SPDX-License-Identifier: Apache-2.0
// Builds a one-node graph by hand and runs an OpDef's infer() and lower() on it, so each op test
// states only shapes, attributes and what it expects.
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/op_def.h"

namespace of::compiler::test {

// One node input: a shape and dtype, optionally constant contents, or absent (an optional input).
struct In {
  Shape shape;
  DType dtype = DType::f32;
  std::optional<std::vector<uint8_t>> data;
  bool absent = false;
};

inline In typed(Shape s, DType t) {
  In in;
  in.shape = std::move(s);
  in.dtype = t;
  return in;
}
inline In f32(Shape s) { return typed(std::move(s), DType::f32); }
inline In absent() {
  In in;
  in.absent = true;
  return in;
}
// A constant 1-D int64 tensor (e.g. Reshape's shape).
inline In const_i64(const std::vector<int64_t>& v) {
  In in = typed({int64_t(v.size())}, DType::i64);
  in.data.emplace(v.size() * 8);
  std::memcpy(in.data->data(), v.data(), in.data->size());
  return in;
}

// Attrs{} with chaining: A().i("axis", 1).is("perm", {1, 0}).s("auto_pad", "VALID").
struct A {
  Attrs a;
  A& i(const std::string& n, int64_t v) { a.set_int(n, v); return *this; }
  A& is(const std::string& n, std::vector<int64_t> v) { a.set_ints(n, std::move(v)); return *this; }
  A& f(const std::string& n, float v) { a.set_float(n, v); return *this; }
  A& s(const std::string& n, std::string v) { a.set_str(n, std::move(v)); return *this; }
  operator Attrs() const { return a; }  // NOLINT: implicit on purpose
};

// The node is named "<OpType>_0" (e.g. "Conv_0"), so error messages read "node 'Conv_0' (Conv): ...".
struct OneNode {
  Graph g;

  // `training`: as in a training plan (Graph::training).
  OneNode(const OpDef& def, std::vector<In> inputs, Attrs attrs = {}, size_t n_outputs = 1, bool training = false) {
    g.training = training;
    std::string type(def.onnx_type);
    size_t dot = type.rfind('.');
    Node n;
    n.op_type = type.substr(dot + 1);  // npos + 1 == 0: the whole name
    n.name = n.op_type + "_0";
    n.domain = dot == std::string::npos ? "" : type.substr(0, dot);
    n.attrs = std::move(attrs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].absent) {
        n.inputs.push_back(kNoValue);
        continue;
      }
      ValueId v = g.add_value("in" + std::to_string(i));
      g.values[v].desc = TensorDesc{inputs[i].shape, inputs[i].dtype};
      g.values[v].known = true;
      g.values[v].data = std::move(inputs[i].data);
      g.values[v].graph_input = !g.values[v].data;
      g.values[v].consumers.push_back(0);
      if (g.values[v].graph_input) g.inputs.push_back(v);
      n.inputs.push_back(v);
    }
    for (size_t i = 0; i < n_outputs; ++i) {
      ValueId v = g.add_value("out" + std::to_string(i));
      g.values[v].producer = 0;
      n.outputs.push_back(v);
    }
    g.nodes.push_back(std::move(n));
    OpCtx ctx(g, g.nodes[0]);
    check_attrs(def, ctx);  // as infer-shapes does
    def.infer(ctx);
    def.lower(ctx);
  }

  const Node& node() const { return g.nodes[0]; }
  const TensorDesc& out(size_t i = 0) const { return g.values[g.nodes[0].outputs[i]].desc; }
  const Shape& shape(size_t i = 0) const { return out(i).shape; }
  const std::string& kernel() const { return g.nodes[0].kernel; }
  std::vector<int64_t> ints(const std::string& name) const { return g.nodes[0].kernel_attrs.get_ints(name); }
  int64_t int_attr(const std::string& name) const { return g.nodes[0].kernel_attrs.get_int(name, -999); }
  float float_attr(const std::string& name) const { return g.nodes[0].kernel_attrs.get_float(name, -999.0f); }
};

}  // namespace of::compiler::test
