// SPDX-License-Identifier: Apache-2.0
// fuse-layer-norm: afterwards no LayerNorm written out as torch exports nn.LayerNorm below
// opset 17 is left whose intermediates nothing else reads:
//
//   m = ReduceMean(x, axes)   d = Sub(x, m)   v = ReduceMean(Pow(d, 2), axes)
//   n = Div(d, Sqrt(Add(v, eps)))   [y = Mul(n, weight)]   [y = Add(y, bias)]
//
// becomes one LayerNormalization node (opset 17's op, the same formula), one kernel and two
// gradient kernels where there were eight and their gradients. The axes must be the trailing
// ones (the normalized shape); the weight must have exactly that shape (and the bias, or its Add
// stays outside). A LayerNorm without affine (elementwise_affine=False) stays written out: a
// scale of ones would need x's shape, which import does not know yet. The node is named
// after the first ReduceMean ("/ln/ReduceMean" -> "/ln/LayerNormalization"), so ofdump shows what
// was fused. Runs before infer-shapes, so ranks come from what import knows: negative axes need
// none; positive ones need x's shape.
#include <algorithm>
#include <cstring>
#include <optional>

#include "compiler/passes/pass.h"
#include "compiler/passes/pattern.h"

namespace of::compiler {
namespace {

using pattern::is_scalar;
using pattern::only_reader;
using pattern::other_input;
using pattern::scalar;

// A ReduceMean's axes (attribute, or opset 18's constant input) when it keeps its dims; else
// nullopt (no axes means all of them: not a LayerNorm torch writes).
std::optional<std::vector<int64_t>> mean_axes(const Graph& g, const Node& n) {
  if (n.attrs.get_int("keepdims", 1) != 1 || n.outputs.size() != 1) return std::nullopt;
  if (n.inputs.size() == 2) {
    if (n.attrs.has("axes") || n.inputs[1] == kNoValue) return std::nullopt;
    const Value& a = g.values[size_t(n.inputs[1])];
    const std::vector<uint8_t>* bytes = a.contents();
    if (!bytes || a.graph_input || a.desc.dtype != DType::i64 || bytes->size() % 8 != 0) return std::nullopt;
    std::vector<int64_t> axes(bytes->size() / 8);
    if (!axes.empty()) std::memcpy(axes.data(), bytes->data(), bytes->size());
    if (axes.empty()) return std::nullopt;
    return axes;
  }
  if (n.inputs.size() != 1) return std::nullopt;
  std::vector<int64_t> axes = n.attrs.get_ints("axes");
  if (axes.empty()) return std::nullopt;
  return axes;
}

// The first normalized axis, negative (-k for the last k dims), when `axes` are exactly the
// trailing dims of x; else nullopt.
std::optional<int64_t> trailing_axis(const Graph& g, ValueId x, std::vector<int64_t> axes) {
  const Value& xv = g.values[size_t(x)];
  const auto k = int64_t(axes.size());
  for (int64_t& a : axes)
    if (a >= 0) {
      if (!xv.known) return std::nullopt;
      a -= int64_t(xv.desc.shape.size());
    }
  std::sort(axes.begin(), axes.end());
  for (int64_t i = 0; i < k; ++i)
    if (axes[size_t(i)] != i - k) return std::nullopt;
  if (xv.known && k > int64_t(xv.desc.shape.size())) return std::nullopt;
  return -k;
}

// w is a known float tensor of rank k (the normalized shape; infer-shapes checks the dims).
bool affine_shaped(const Graph& g, ValueId w, int64_t k) {
  if (w == kNoValue) return false;
  const Value& v = g.values[size_t(w)];
  return v.known && v.desc.dtype == DType::f32 && int64_t(v.desc.shape.size()) == k;
}

void drop_reader(Graph& g, ValueId v, NodeId reader) {
  std::vector<NodeId>& r = g.values[size_t(v)].consumers;
  r.erase(std::remove(r.begin(), r.end(), reader), r.end());
}

}  // namespace

bool FuseLayerNorm::run(Compilation& c) {
  Graph& g = c.graph;
  std::vector<bool> dead(g.nodes.size(), false);
  bool changed = false;
  for (NodeId m = 0; m < NodeId(g.nodes.size()); ++m) {
    const Node& mean = g.nodes[size_t(m)];
    if (dead[size_t(m)] || mean.op_type != "ReduceMean" || !mean.domain.empty()) continue;
    const std::optional<std::vector<int64_t>> axes = mean_axes(g, mean);
    if (!axes || mean.inputs[0] == kNoValue) continue;
    const ValueId x = mean.inputs[0];
    const std::optional<int64_t> axis = trailing_axis(g, x, *axes);
    if (!axis) continue;
    const NodeId sub = only_reader(g, mean.outputs[0], "Sub");
    if (sub < 0 || g.nodes[size_t(sub)].inputs != std::vector<ValueId>{x, mean.outputs[0]}) continue;
    // d = x - m is read twice: squared for the variance and divided by the deviation.
    const ValueId d = g.nodes[size_t(sub)].outputs[0];
    const Value& dv = g.values[size_t(d)];
    if (dv.graph_output || dv.consumers.size() != 2) continue;
    NodeId pow = dv.consumers[0], div = dv.consumers[1];
    if (g.nodes[size_t(pow)].op_type != "Pow") std::swap(pow, div);
    const Node& pn = g.nodes[size_t(pow)];
    const Node& dn = g.nodes[size_t(div)];
    if (pn.op_type != "Pow" || !pn.domain.empty() || pn.inputs.size() != 2 || pn.inputs[0] != d ||
        !is_scalar(g, pn.inputs[1], 2.0f))
      continue;
    if (dn.op_type != "Div" || !dn.domain.empty() || dn.inputs.size() != 2 || dn.inputs[0] != d || dn.outputs.size() != 1)
      continue;
    const NodeId var = only_reader(g, pn.outputs[0], "ReduceMean");
    if (var < 0 || mean_axes(g, g.nodes[size_t(var)]) != axes) continue;
    const ValueId v = g.nodes[size_t(var)].outputs[0];
    const NodeId add_eps = only_reader(g, v, "Add");
    if (add_eps < 0) continue;
    const std::optional<float> eps = scalar(g, other_input(g.nodes[size_t(add_eps)], v));
    if (!eps || !(*eps >= 0.0f)) continue;
    const NodeId sqrt = only_reader(g, g.nodes[size_t(add_eps)].outputs[0], "Sqrt");
    if (sqrt < 0 || only_reader(g, g.nodes[size_t(sqrt)].outputs[0], "Div") != div) continue;
    // The affine tail, when its tensors have the normalized shape.
    const int64_t k = -*axis;
    ValueId y = dn.outputs[0], scale = kNoValue, bias = kNoValue;
    std::vector<NodeId> chain = {m, sub, pow, var, add_eps, sqrt, div};
    const NodeId mul = only_reader(g, y, "Mul");
    if (mul >= 0 && affine_shaped(g, other_input(g.nodes[size_t(mul)], y), k)) {
      scale = other_input(g.nodes[size_t(mul)], y);
      y = g.nodes[size_t(mul)].outputs[0];
      chain.push_back(mul);
      const NodeId add = only_reader(g, y, "Add");
      if (add >= 0 && affine_shaped(g, other_input(g.nodes[size_t(add)], y), k)) {
        bias = other_input(g.nodes[size_t(add)], y);
        y = g.nodes[size_t(add)].outputs[0];
        chain.push_back(add);
      }
    }
    if (scale == kNoValue) continue;  // without affine: stays written out (see the top)
    std::string name = mean.name;
    const size_t at = name.rfind("ReduceMean");
    name = at == std::string::npos ? name + "/LayerNormalization" : name.replace(at, 10, "LayerNormalization");
    // The last node of the chain becomes the LayerNormalization: x, the scale and the bias are
    // all defined before it, so topological order holds. Every other node of the chain dies;
    // remove_nodes drops them from their inputs' readers, and the last node's old inputs lose it.
    const NodeId last = chain.back();
    for (ValueId in : g.nodes[size_t(last)].inputs)
      if (in != kNoValue) drop_reader(g, in, last);
    Node& ln = g.nodes[size_t(last)];
    ln.name = name;
    ln.op_type = "LayerNormalization";
    ln.attrs = {};
    ln.attrs.set_int("axis", *axis);
    ln.attrs.set_float("epsilon", *eps);
    ln.inputs = bias == kNoValue ? std::vector<ValueId>{x, scale} : std::vector<ValueId>{x, scale, bias};
    ln.outputs = {y};
    for (ValueId in : ln.inputs) g.values[size_t(in)].consumers.push_back(last);
    g.values[size_t(y)].producer = last;
    chain.pop_back();
    for (NodeId n : chain) dead[size_t(n)] = true;
    changed = true;
  }
  if (!changed) return false;
  remove_nodes(g, dead);
  return true;
}

}  // namespace of::compiler
