// SPDX-License-Identifier: Apache-2.0
// MatMul with numpy semantics: a 1-D operand is promoted ([K] -> [1,K] on the left, [K,1] on the
// right) and the added dim dropped again; batch dims broadcast.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

void infer_matmul(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  c.expect_float(1);
  Shape a = c.in(0).shape, b = c.in(1).shape;
  if (a.empty() || b.empty())
    c.fail("inputs must have rank >= 1, have shapes {} and {}", shape_str(a), shape_str(b));
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  int64_t k = a.back();
  if (b[b.size() - 2] != k) {
    std::vector<std::string> want(b.size() - 2, "*");
    want.push_back(std::to_string(k));
    if (!b_vec) want.push_back("*");
    c.fail("input 1 has shape {}, expected [{}] to match K = {} of input 0 {}", shape_str(c.in(1).shape),
           fmt::join(want, ","), k, shape_str(c.in(0).shape));
  }
  // Batch dims: numpy broadcasting, aligned right.
  size_t ra = a.size() - 2, rb = b.size() - 2, rank = std::max(ra, rb);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - ra ? 1 : a[i - (rank - ra)];
    int64_t db = i < rank - rb ? 1 : b[i - (rank - rb)];
    if (da != db && da != 1 && db != 1)
      c.fail("batch dimensions of inputs {} and {} do not broadcast ({} vs {})", shape_str(c.in(0).shape),
             shape_str(c.in(1).shape), da, db);
    out[i] = da == 1 ? db : da;
  }
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  c.out(0) = TensorDesc{out, DType::f32};
}

void lower_matmul(OpCtx& c) { c.set_kernel("matmul"); }

// Y = A B (batched, broadcast): dA = dY B^T and dB = A^T dY, summed over the batch dims an
// operand was broadcast along. A 1-D operand is promoted as the forward pass did it ([K] ->
// [1,K] or [K,1]) and its gradient reshaped back. Two 2-D operands take one gemm each, batched
// ones one matmul each, with the transposes as flags (the kernels read the operand transposed:
// attention's gradients no longer copy q, k, v and the weights into their transposes first).
void grad_matmul(GradCtx& g) {
  const ValueId a = g.in(0), b = g.in(1);
  Shape sa = g.desc(a).shape, sb = g.desc(b).shape, sy = g.desc(g.out(0)).shape;
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  if (a_vec) sy.insert(sy.end() - (b_vec ? 0 : 1), 1);
  if (b_vec) sy.push_back(1);
  const ValueId ap = g.reshape(a, sa), bp = g.reshape(b, sb), dy = g.reshape(g.out_grad(0), sy);
  auto product = [&](const char* kernel, ValueId x, ValueId y, bool tx, bool ty, const Shape& out) {
    Attrs at;
    at.set_int("trans_a", tx);
    at.set_int("trans_b", ty);
    return g.emit("MatMulGrad", kernel, {x, y}, std::move(at), TensorDesc{out, DType::f32});
  };
  auto gemm = [&](ValueId x, ValueId y, bool tx, bool ty, const Shape& out) { return product("gemm", x, y, tx, ty, out); };
  const bool plain = sa.size() == 2 && sb.size() == 2;
  // [..., M, K] x [K, N] (a layer applied to every position): the batch folds into the rows, so
  // both gradients are single GEMMs, and a weight is never transposed as a task of its own (which
  // would read nothing streamed).
  if (!plain && sa.size() > 2 && sb.size() == 2 && !a_vec && !b_vec) {
    const int64_t rows = numel(sa) / sa.back(), k = sb[0], n = sb[1];
    const ValueId dy2 = g.reshape(dy, {rows, n});
    if (g.wants(0)) g.add_in_grad(0, g.reshape(gemm(dy2, bp, false, true, {rows, k}), g.desc(a).shape));
    if (g.wants(1)) g.add_in_grad(1, g.reshape(gemm(g.reshape(ap, {rows, k}), dy2, true, false, sb), g.desc(b).shape));
    return;
  }
  // The product's batch dims are dY's; the sums over broadcast dims come from unbroadcast.
  Shape batch(sy.begin(), sy.end() - 2);
  auto with_batch = [&](int64_t rows, int64_t cols) {
    Shape s = batch;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  };
  if (g.wants(0)) {
    const int64_t m = sa[sa.size() - 2], k = sa.back();
    ValueId da = plain ? gemm(dy, bp, false, true, sa) : product("matmul", dy, bp, false, true, with_batch(m, k));
    g.add_in_grad(0, g.reshape(g.unbroadcast(da, sa), g.desc(a).shape));
  }
  if (g.wants(1)) {
    const int64_t k = sb[sb.size() - 2], n = sb.back();
    ValueId db = plain ? gemm(ap, dy, true, false, sb) : product("matmul", ap, dy, true, false, with_batch(k, n));
    g.add_in_grad(1, g.reshape(g.unbroadcast(db, sb), g.desc(b).shape));
  }
}

// matmul: [..., M, K] x [..., K, N] (B may be 2-D and then is shared by every batch): batch axes,
// rows, columns, or the reduction of a shared B (partial sums). An operand read transposed
// (kernel attributes trans_a / trans_b) has its last two axes the other way round.
void matmul_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  using Sig = Signature;
  const Shape& a = sbp::shape_of(g, n.inputs[0]);
  const Shape& b = sbp::shape_of(g, n.inputs[1]);
  const Shape& y = sbp::shape_of(g, n.outputs[0]);
  if (a.size() < 2 || b.size() < 2) return;
  const auto ra = int64_t(a.size()), rb = int64_t(b.size()), ry = int64_t(y.size());
  const bool ta = n.kernel_attrs.get_int("trans_a", 0) != 0, tb = n.kernel_attrs.get_int("trans_b", 0) != 0;
  const int64_t m_a = ta ? ra - 1 : ra - 2, k_a = ta ? ra - 2 : ra - 1, k_b = tb ? rb - 1 : rb - 2, n_b = tb ? rb - 2 : rb - 1;
  for (int64_t d = 0; d < ry - 2; ++d) {  // batch axes
    const int64_t da = d - (ry - ra), db = d - (ry - rb);
    const Sbp sa = da >= 0 && a[size_t(da)] == y[size_t(d)] ? Sbp::S(da) : Sbp::B();
    const Sbp sb = db >= 0 && b[size_t(db)] == y[size_t(d)] ? Sbp::S(db) : Sbp::B();
    out.push_back(Sig{{sa, sb}, {Sbp::S(d)}, Sig::Tweak::none, true});
  }
  out.push_back(Sig{{Sbp::S(m_a), Sbp::B()}, {Sbp::S(ry - 2)}, Sig::Tweak::none, true});
  out.push_back(Sig{{Sbp::B(), Sbp::S(n_b)}, {Sbp::S(ry - 1)}, Sig::Tweak::none, true});
  if (rb == 2) out.push_back(Sig{{Sbp::S(k_a), Sbp::S(k_b)}, {Sbp::P()}, Sig::Tweak::none, true});
}

// of.MatMulTransB (fuse-transposed-weights makes it from MatMul(A, Transpose(W)), what torch
// exports nn.Linear on 3-D input as): A [..., M, K] times W^T for a 2-D W [N, K].
void infer_matmul_tb(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  c.expect_float(1);
  const Shape& a = c.in(0).shape;
  const Shape& w = c.in(1).shape;
  if (a.size() < 2 || w.size() != 2 || a.back() != w[1])
    c.fail("inputs must be [..., M, K] and [N, K], have shapes {} and {}", shape_str(a), shape_str(w));
  Shape y(a.begin(), a.end() - 1);
  y.push_back(w[0]);
  c.out(0) = TensorDesc{y, DType::f32};
}

void lower_matmul_tb(OpCtx& c) { c.set_kernel("matmul_tb"); }

// Y = A W^T with the rows of A folded: dA = dY W and dW = dY^T A, one GEMM each; neither the
// weight nor its gradient is transposed as a task of its own.
void grad_matmul_tb(GradCtx& g) {
  const ValueId a = g.in(0), w = g.in(1);
  const Shape sa = g.desc(a).shape, sw = g.desc(w).shape;  // copies: emitting adds values
  const int64_t rows = numel(sa) / std::max<int64_t>(sa.back(), 1), n = sw[0], k = sw[1];
  const ValueId dy = g.reshape(g.out_grad(0), {rows, n});
  auto gemm = [&](ValueId x, ValueId y, bool tx, const Shape& out) {
    Attrs at;
    at.set_int("trans_a", tx);
    at.set_int("trans_b", 0);
    return g.emit("MatMulGrad", "gemm", {x, y}, std::move(at), TensorDesc{out, DType::f32});
  };
  if (g.wants(0)) g.add_in_grad(0, g.reshape(gemm(dy, w, false, {rows, k}), sa));
  if (g.wants(1)) g.add_in_grad(1, gemm(dy, g.reshape(a, {rows, k}), true, sw));
}

// matmul_tb: [..., M, K] x [N, K]^T: batch axes and rows of A (W broadcast), W's rows (columns of
// Y), or the reduction (partial sums).
void matmul_tb_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  using Sig = Signature;
  const Shape& a = sbp::shape_of(g, n.inputs[0]);
  const Shape& w = sbp::shape_of(g, n.inputs[1]);
  if (a.size() < 2 || w.size() != 2) return;
  const auto ra = int64_t(a.size());
  for (int64_t d = 0; d < ra - 1; ++d) out.push_back(Sig{{Sbp::S(d), Sbp::B()}, {Sbp::S(d)}, Sig::Tweak::none, true});
  out.push_back(Sig{{Sbp::B(), Sbp::S(0)}, {Sbp::S(ra - 1)}, Sig::Tweak::none, true});
  out.push_back(Sig{{Sbp::S(ra - 1), Sbp::S(1)}, {Sbp::P()}, Sig::Tweak::none, true});
}

}  // namespace

OpDef matmul_trans_b_def() {
  return {"of.MatMulTransB", infer_matmul_tb, lower_matmul_tb, grad_matmul_tb, {}, {sbp_rule("matmul_tb", matmul_tb_sbp)}};
}

OpDef matmul_def() { return {"MatMul", infer_matmul, lower_matmul, grad_matmul, {}, {sbp_rule("matmul", matmul_sbp)}}; }

}  // namespace of::compiler
