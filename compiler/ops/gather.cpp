// SPDX-License-Identifier: Apache-2.0
// Gather along any axis: axis 0 is what torch exports for nn.Embedding (Y = data[indices], Y's
// shape indices.shape + data.shape[1:]); another axis a tensor index such as `x[:, 0]` (Y's shape
// data.shape[:axis] + indices.shape + data.shape[axis+1:]). Indices are int64 or int32; a negative index counts from the
// end, as in ONNX. The gradient scatters dY's rows back into a table of data's shape, adding the
// rows of repeated indices.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_gather(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  const TensorDesc& data = c.in(0);
  const TensorDesc& idx = c.in(1);
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32)
    c.fail("input 1 (indices) has dtype {}, expected int64 or int32", dtype_name(idx.dtype));
  if (data.shape.empty()) c.fail("input 0 (data) is a scalar; nothing to gather from");
  const int64_t axis = c.axis(c.attrs().get_int("axis", 0), int64_t(data.shape.size()), "attribute axis");
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  c.out(0) = TensorDesc{out, data.dtype};
}

void lower_gather(OpCtx& c) {
  Attrs a;
  a.set_int("axis", c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size()), "attribute axis"));
  c.set_kernel("gather", a);
}

void grad_gather(GradCtx& g) {
  if (!g.wants(0)) return;
  g.add_in_grad(0, g.emit("GatherGrad", "gather_grad", {g.out_grad(0), g.in(1)}, g.attrs(), g.desc(g.in(0))));
}

// gather along `axis`: Y [data[:axis], indices, data[axis+1:]]. Splitting the indices along j
// splits Y at axis + j (the table whole on every device); splitting the table along another axis
// splits Y there (the indices whole). gather_grad (dY, indices) -> dTable: with the indices split,
// each device scatters its rows into a whole table, partial sums; with a table axis split, that
// axis of dTable.
void gather_sbp(const Graph& g, const Node& n, std::vector<Signature>& out, bool grad) {
  using Sig = Signature;
  const Shape& table = sbp::shape_of(g, grad ? n.outputs[0] : n.inputs[0]);
  const Shape& idx = sbp::shape_of(g, n.inputs[1]);
  const auto axis = n.kernel_attrs.get_int("axis", 0), ri = int64_t(idx.size());
  for (int64_t j = 0; j < ri; ++j)
    if (idx[size_t(j)] > 1)
      out.push_back(grad ? Sig{{Sbp::S(axis + j), Sbp::S(j)}, {Sbp::P()}, Sig::Tweak::none, true}
                         : Sig{{Sbp::B(), Sbp::S(j)}, {Sbp::S(axis + j)}, Sig::Tweak::none, true});
  for (int64_t k = 0; k < int64_t(table.size()); ++k) {
    if (k == axis || table[size_t(k)] <= 1) continue;
    const int64_t y = k < axis ? k : k - 1 + ri;
    out.push_back(grad ? Sig{{Sbp::S(y), Sbp::B()}, {Sbp::S(k)}, Sig::Tweak::none, true}
                       : Sig{{Sbp::S(k), Sbp::B()}, {Sbp::S(y)}, Sig::Tweak::none, true});
  }
}

}  // namespace

OpDef gather_def() {
  return {"Gather", infer_gather, lower_gather, grad_gather, {int_attr("axis", -kMaxAxis, kMaxAxis)},
          {sbp_rule("gather", [](const Graph& g, const Node& n, std::vector<Signature>& out) { gather_sbp(g, n, out, false); }),
           sbp_rule("gather_grad", [](const Graph& g, const Node& n, std::vector<Signature>& out) { gather_sbp(g, n, out, true); })}};
}

}  // namespace of::compiler

// GatherElements (torch.gather), a composite: Y[m] = X[m with axis replaced by indices[m]].
// Indices known at compile time: X flattened (Reshape), one Gather of the flat offsets (a
// constant), and a Reshape to the indices' shape; Gather's gradient adds the rows of repeated
// offsets, as torch.gather's backward (a scatter-add) does. Indices computed at run time (a
// policy's log-probability of the action taken, `logp.gather(1, actions)`; a language model's of
// the next token): kernel gather_elements (of.GatherElements, compiler/ops/scatter_elements.cpp),
// whose gradient scatters dY back into zeros, adding repeated indices. An index outside the axis
// gives 0 (torch refuses it).
namespace of::compiler {
namespace {

std::vector<int64_t> element_offsets(OpCtx& c) {
  const Shape& data = c.in(0).shape;
  const Shape& idx = c.in(1).shape;
  if (c.in(1).dtype != DType::i64 && c.in(1).dtype != DType::i32)
    c.fail("input 1 (indices) has dtype {}, expected int64 or int32", dtype_name(c.in(1).dtype));
  if (idx.size() != data.size()) c.fail("indices {} and data {} differ in rank", shape_str(idx), shape_str(data));
  const auto rank = int64_t(data.size());
  const int64_t axis = c.axis(c.attrs().get_int("axis", 0), rank, "attribute axis");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idx[size_t(d)] > data[size_t(d)])
      c.fail("indices {} are longer than data {} on axis {}", shape_str(idx), shape_str(data), d);
  if (!c.const_data(1)) return {};  // run-time indices: no offsets
  const std::vector<int64_t> values = c.const_ints(1);
  std::vector<int64_t> strides(size_t(rank), 1);
  for (int64_t d = rank - 1; d > 0; --d) strides[size_t(d - 1)] = strides[size_t(d)] * data[size_t(d)];
  std::vector<int64_t> out(values.size()), m(size_t(rank), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t at = values[i];
    if (at < 0) at += data[size_t(axis)];
    if (at < 0 || at >= data[size_t(axis)])
      c.fail("index {} at flat position {} is outside axis {} of data {}", values[i], i, axis, shape_str(data));
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += (d == axis ? at : m[size_t(d)]) * strides[size_t(d)];
    out[i] = flat;
    for (int64_t d = rank - 1; d >= 0; --d) {  // the next index of the indices' shape
      if (++m[size_t(d)] < idx[size_t(d)]) break;
      m[size_t(d)] = 0;
    }
  }
  return out;
}

void infer_gather_elements(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  element_offsets(c);  // checks the indices
  c.out(0) = TensorDesc{c.in(1).shape, c.in(0).dtype};
}

// The flat offsets (none for run-time indices) and the axis, for expand() (a composite's lower
// only normalizes attributes).
void lower_gather_elements(OpCtx& c) {
  c.node().kernel_attrs.set_int("runtime", c.const_data(1) ? 0 : 1);
  c.node().kernel_attrs.set_int("int32_indices", c.in(1).dtype == DType::i32 ? 1 : 0);
  c.node().kernel_attrs.set_int("axis", c.axis(c.attrs().get_int("axis", 0), int64_t(c.in(0).shape.size()), "attribute axis"));
  c.node().kernel_attrs.set_ints("offsets", element_offsets(c));
}

// Run-time indices: kernel gather_elements (of.GatherElements), whose gradient scatters dY back.
void expand_runtime_gather_elements(ExpandCtx& c) {
  Attrs a;
  a.set_int("axis", c.node().kernel_attrs.get_int("axis", 0));
  c.emit("of.GatherElements", {c.input(0), c.input(1)}, std::move(a), c.output(0));
}

void expand_gather_elements(ExpandCtx& c) {
  if (c.node().kernel_attrs.get_int("runtime", 0) != 0) {
    expand_runtime_gather_elements(c);
    return;
  }
  const Shape x = c.shape(c.input(0)), y = c.shape(c.output(0));
  const ValueId flat = c.emit("Reshape", {c.input(0), c.ints({numel(x)})});
  const ValueId picked = c.emit("Gather", {flat, c.ints(c.node().kernel_attrs.get_ints("offsets"))});
  c.emit("Reshape", {picked, c.ints(std::vector<int64_t>(y.begin(), y.end()))}, {}, c.output(0));
}

}  // namespace

OpDef gather_elements_def() {
  OpDef d{"GatherElements", infer_gather_elements, lower_gather_elements, nullptr, {int_attr("axis", -kMaxAxis, kMaxAxis)}};
  d.expand = expand_gather_elements;
  return d;
}

}  // namespace of::compiler
