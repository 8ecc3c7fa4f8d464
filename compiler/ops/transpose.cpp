// SPDX-License-Identifier: Apache-2.0
// Transpose: out.shape[i] = in.shape[perm[i]]; perm defaults to reversing the dims. Any dtype.
#include <fmt/format.h>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

std::vector<int64_t> transpose_perm(const OpCtx& c) {
  size_t rank = c.in(0).shape.size();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(rank - 1 - i);
  perm = c.attrs().get_ints("perm", perm);
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (size_t i = 0; ok && i < rank; ++i) {
    ok = perm[i] >= 0 && perm[i] < int64_t(rank) && !seen[perm[i]];
    if (ok) seen[perm[i]] = true;
  }
  if (!ok)
    c.fail("attribute perm = [{}] is not a permutation of 0..{} for input 0 {}", fmt::join(perm, ","),
           int64_t(rank) - 1, shape_str(c.in(0).shape));
  return perm;
}

void infer_transpose(OpCtx& c) {
  c.expect_arity(1, 1);
  const TensorDesc& x = c.in(0);
  std::vector<int64_t> perm = transpose_perm(c);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = x.shape[perm[i]];
  c.out(0) = TensorDesc{out, x.dtype};
}

void lower_transpose(OpCtx& c) {
  Attrs a;
  a.set_ints("perm", transpose_perm(c));
  c.set_kernel("transpose", std::move(a));
}

// dX = dY transposed back: the inverse permutation.
void grad_transpose(GradCtx& g) {
  if (!g.wants(0)) return;
  const std::vector<int64_t> perm = g.attrs().get_ints("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  Attrs a;
  a.set_ints("perm", inverse);
  g.add_in_grad(0, g.emit("TransposeGrad", "transpose", {g.out_grad(0)}, std::move(a), g.desc(g.in(0))));
}

// Output axis o is input axis perm[o]: a split follows its axis.
void transpose_sbp(const Graph&, const Node& n, std::vector<Signature>& out) {
  const std::vector<int64_t> perm = n.kernel_attrs.get_ints("perm");
  for (size_t o = 0; o < perm.size(); ++o)
    out.push_back(Signature{{Sbp::S(perm[o])}, {Sbp::S(int64_t(o))}, Signature::Tweak::none, true});
}

}  // namespace

OpDef transpose_def() { return {"Transpose", infer_transpose, lower_transpose, grad_transpose, {ints_attr("perm", 0, kMaxAxis)},
          {sbp_rule("transpose", transpose_sbp)}}; }

}  // namespace of::compiler
