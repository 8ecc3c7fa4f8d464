// SPDX-License-Identifier: Apache-2.0
// Gemm: Y = alpha * op(A) * op(B) + beta * C, A and B 2-D, C unidirectionally broadcast to [M,N].
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_gemm(OpCtx& c) {
  c.expect_arity(2, 3);
  for (size_t i = 0; i < 3; ++i)
    if (c.has_in(i)) c.expect_float(i);
  const Shape& a = c.in(0).shape;
  const Shape& b = c.in(1).shape;
  if (a.size() != 2) c.fail("input 0 (A) has shape {}, expected rank 2", shape_str(a));
  if (b.size() != 2) c.fail("input 1 (B) has shape {}, expected rank 2", shape_str(b));
  bool ta = c.attrs().get_int("transA", 0) != 0, tb = c.attrs().get_int("transB", 0) != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (kb != k)
    c.fail("input 1 (B) has shape {}, expected {} to match K = {} of input 0 (A) {} (transA={}, transB={})",
           shape_str(b), tb ? fmt::format("[*,{}]", k) : fmt::format("[{},*]", k), k, shape_str(a), int(ta), int(tb));
  if (c.has_in(2)) {
    // Unidirectional broadcast: C's dims, aligned right, are 1 or equal to [M,N]'s.
    const Shape& cs = c.in(2).shape;
    Shape mn{m, n};
    bool ok = cs.size() <= 2;
    for (size_t i = 0; ok && i < cs.size(); ++i) ok = cs[i] == 1 || cs[i] == mn[2 - cs.size() + i];
    if (!ok) c.fail("input 2 (C) has shape {}, which does not broadcast to the output [M,N] = {}", shape_str(cs), shape_str(mn));
  }
  c.out(0) = TensorDesc{{m, n}, DType::f32};
}

void lower_gemm(OpCtx& c) {
  Attrs a;
  a.set_float("alpha", c.attrs().get_float("alpha", 1.0f));
  a.set_float("beta", c.attrs().get_float("beta", 1.0f));
  a.set_int("trans_a", c.attrs().get_int("transA", 0) != 0);
  a.set_int("trans_b", c.attrs().get_int("transB", 0) != 0);
  c.set_kernel("gemm", std::move(a));
}

// Y = alpha*op(A)op(B) + beta*C: dop(A) = alpha*dY op(B)^T and dop(B) = alpha*op(A)^T dY, each
// written as one gemm that reads A, B and dY as stored (the transposes become gemm flags).
void grad_gemm(GradCtx& g) {
  const ValueId dy = g.out_grad(0);
  const bool ta = g.attrs().get_int("trans_a", 0) != 0, tb = g.attrs().get_int("trans_b", 0) != 0;
  const float alpha = g.attrs().get_float("alpha", 1.0f), beta = g.attrs().get_float("beta", 1.0f);
  auto gemm = [&](ValueId a, ValueId b, bool trans_a, bool trans_b, const TensorDesc& d) {
    Attrs at;
    at.set_float("alpha", alpha);
    at.set_float("beta", 1.0f);
    at.set_int("trans_a", trans_a);
    at.set_int("trans_b", trans_b);
    return g.emit("GemmGrad", "gemm", {a, b}, std::move(at), d);
  };
  const ValueId a = g.in(0), b = g.in(1);
  if (g.wants(0)) g.add_in_grad(0, ta ? gemm(b, dy, tb, true, g.desc(a)) : gemm(dy, b, false, !tb, g.desc(a)));
  if (g.wants(1)) g.add_in_grad(1, tb ? gemm(dy, a, true, ta, g.desc(b)) : gemm(a, dy, !ta, false, g.desc(b)));
  if (g.wants(2)) {
    ValueId dc = g.unbroadcast(dy, g.desc(g.in(2)).shape);
    if (beta != 1.0f) dc = g.emit("Mul", "mul", {dc, g.scalar(beta)}, {}, g.desc(g.in(2)));
    g.add_in_grad(2, dc);
  }
}

// gemm: Y = act(alpha * op(A) op(B) + beta * C), op(A) [M,K], op(B) [K,N], C broadcast to [M,N]:
// rows (S0 of A), columns (S1 of B) or, without an activation, the reduction (partial sums;
// the first part adds the bias).
void gemm_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  using Sig = Signature;
  const bool ta = n.kernel_attrs.get_int("trans_a", 0) != 0, tb = n.kernel_attrs.get_int("trans_b", 0) != 0;
  const bool has_c = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  const Shape c = has_c ? sbp::shape_of(g, n.inputs[2]) : Shape{};
  const Shape& y = sbp::shape_of(g, n.outputs[0]);
  const int64_t m_a = ta ? 1 : 0, k_a = ta ? 0 : 1, k_b = tb ? 1 : 0, n_b = tb ? 0 : 1;
  auto with_c = [&](std::vector<Sbp> ab, Sbp c_sbp) {
    if (has_c) ab.push_back(c_sbp);
    return ab;
  };
  // C along M: only a [M,N] or [M,1] bias is split with the rows.
  const Sbp c_rows = c.size() == 2 && c[0] == y[0] && y[0] > 1 ? Sbp::S(0) : Sbp::B();
  const Sbp c_cols = !c.empty() && c.back() == y[1] && y[1] > 1 ? Sbp::S(int64_t(c.size()) - 1) : Sbp::B();
  out.push_back(Sig{with_c({Sbp::S(m_a), Sbp::B()}, c_rows), {Sbp::S(0)}, Sig::Tweak::none, true});
  out.push_back(Sig{with_c({Sbp::B(), Sbp::S(n_b)}, c_cols), {Sbp::S(1)}, Sig::Tweak::none, true});
  // Splitting K gives partial sums, which an activation would not survive.
  if (n.kernel_attrs.get_str("activation").empty())
    out.push_back(Sig{with_c({Sbp::S(k_a), Sbp::S(k_b)}, Sbp::B()), {Sbp::P()}, has_c ? Sig::Tweak::first_adds_bias : Sig::Tweak::none, true});
}

}  // namespace

OpDef gemm_def() { return {"Gemm", infer_gemm, lower_gemm, grad_gemm,
          {bool_attr("transA"), bool_attr("transB"), real_attr("alpha"), real_attr("beta")}, {sbp_rule("gemm", gemm_sbp)}}; }

}  // namespace of::compiler
