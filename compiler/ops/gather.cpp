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
