// SPDX-License-Identifier: Apache-2.0
// GradCtx: how gradient rules add backward nodes to the graph.
#include <algorithm>
#include <cstring>

#include "compiler/ops/op_def.h"

namespace of::compiler {

bool GradCtx::wants(size_t i) const {
  return i < node().inputs.size() && in(i) != kNoValue && wants_[size_t(in(i))];
}

ValueId GradCtx::emit(const std::string& op, const std::string& kernel, std::vector<ValueId> inputs, Attrs attrs,
                      TensorDesc desc) {
  return emit_n(op, kernel, std::move(inputs), std::move(attrs), {std::move(desc)})[0];
}

std::vector<ValueId> GradCtx::emit_n(const std::string& op, const std::string& kernel, std::vector<ValueId> inputs,
                                     Attrs attrs, std::vector<TensorDesc> descs) {
  const auto id = NodeId(g_.nodes.size());
  const std::string name = fmt::format("{}/{}_{}", node().name, op, id);
  std::vector<ValueId> outs;
  for (size_t k = 0; k < descs.size(); ++k) {
    const ValueId out = g_.add_value(k == 0 ? name : fmt::format("{}:{}", name, k));
    g_.values[size_t(out)].desc = std::move(descs[k]);
    g_.values[size_t(out)].known = true;
    g_.values[size_t(out)].producer = id;
    outs.push_back(out);
  }
  for (ValueId v : inputs) g_.values[size_t(v)].consumers.push_back(id);
  grads_.resize(g_.values.size(), kNoValue);
  wants_.resize(g_.values.size(), false);
  Node n{.name = name, .op_type = op, .inputs = inputs, .outputs = outs, .kernel = kernel,
         .kernel_attrs = std::move(attrs), .runtime_inputs = inputs};
  n.forward = node_;
  g_.nodes.push_back(std::move(n));  // invalidates Node references: node() looks it up again
  return outs;
}

ValueId GradCtx::scalar(float x) {
  const ValueId v = g_.add_value(fmt::format("{}/const_{}", node().name, g_.values.size()));
  set_scalar(g_.values[size_t(v)], x);
  grads_.resize(g_.values.size(), kNoValue);
  wants_.resize(g_.values.size(), false);
  return v;
}

ValueId GradCtx::constant(Shape shape, const std::vector<float>& values) {
  OF_ASSERT(int64_t(values.size()) == numel(shape), "constant: values do not fill the shape");
  const ValueId v = scalar(0.0f);
  Value& val = g_.values[size_t(v)];
  val.desc = TensorDesc{shape, DType::f32};
  val.data = std::vector<uint8_t>(values.size() * 4);
  std::memcpy(val.data->data(), values.data(), values.size() * 4);
  return v;
}

std::optional<std::vector<float>> GradCtx::const_floats(ValueId v) const {
  const Value& val = g_.values[size_t(v)];
  const std::vector<uint8_t>* bytes = val.contents();
  if (!bytes || val.desc.dtype != DType::f32) return std::nullopt;
  std::vector<float> out(bytes->size() / 4);
  std::memcpy(out.data(), bytes->data(), out.size() * 4);
  return out;
}

ValueId GradCtx::reshape(ValueId v, Shape shape) {
  if (desc(v).shape == shape) return v;
  return emit("Reshape", "copy", {v}, {}, TensorDesc{shape, desc(v).dtype});
}

ValueId GradCtx::unbroadcast(ValueId dx, Shape target) {
  const Shape s = desc(dx).shape;
  if (s == target) return dx;
  const size_t lead = s.size() - target.size();
  std::vector<int64_t> axes;
  for (size_t k = 0; k < s.size(); ++k)
    if (k < lead || (target[k - lead] == 1 && s[k] != 1)) axes.push_back(int64_t(k));
  ValueId out = dx;
  if (!axes.empty()) {
    Shape reduced;
    for (size_t k = 0; k < s.size(); ++k)
      if (std::find(axes.begin(), axes.end(), int64_t(k)) == axes.end()) reduced.push_back(s[k]);
    Attrs a;
    a.set_ints("axes", axes);
    a.set_int("keepdims", 0);
    out = emit("ReduceSum", "reduce_sum", {dx}, std::move(a), TensorDesc{reduced, DType::f32});
  }
  return reshape(out, target);
}

void GradCtx::add_in_grad(size_t i, ValueId dx) {
  const ValueId v = in(i);
  if (grads_[size_t(v)] == kNoValue) {
    grads_[size_t(v)] = dx;
    return;
  }
  grads_[size_t(v)] = emit("Add", "add", {grads_[size_t(v)], dx}, {}, desc(v));
}

}  // namespace of::compiler
