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

}  // namespace

OpDef matmul_def() { return {"MatMul", infer_matmul, lower_matmul}; }

}  // namespace of::compiler
