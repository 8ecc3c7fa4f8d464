// SPDX-License-Identifier: Apache-2.0
// matmul (ONNX MatMul, numpy semantics): 1-D operands are promoted and then squeezed, batch
// dimensions broadcast. One dnnl_sgemm per batch, with offsets precomputed at prepare time.
// matmul_tb: A [..., M, K] times the transpose of a 2-D B [N, K] (a linear layer's weight as
// torch stores it), one sgemm over all rows: the weight is read transposed, never copied.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

class MatMul final : public Kernel {
 public:
  MatMul(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  friend class MatMulTransB;
  MatMul() = default;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  char trans_b_ = 'N';
  std::vector<int64_t> a_offsets_, b_offsets_;  // per batch, in elements; Y's is i*M*N
};

MatMul::MatMul(const KernelConfig& cfg) {
  check_arity(cfg, "matmul", 2, 2, 1);
  check_dtypes(cfg, "matmul", DType::f32);
  const Shape& a = cfg.inputs[0].shape;
  const Shape& b = cfg.inputs[1].shape;
  if (a.empty() || b.empty())
    fail(where_of(cfg), "matmul: operands {} and {} must have rank >= 1", shape_str(a),
         shape_str(b));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  m_ = a_vec ? 1 : a[a.size() - 2];
  k_ = a.back();
  n_ = b_vec ? 1 : b.back();
  const int64_t kb = b_vec ? b[0] : b[b.size() - 2];
  if (kb != k_)
    fail(where_of(cfg), "matmul: inner dimensions differ: {} x {}", shape_str(a), shape_str(b));

  // Broadcast the batch dimensions (all but the last two), aligned at the right.
  const Shape a_batch(a.begin(), a.end() - (a_vec ? 1 : 2));
  const Shape b_batch(b.begin(), b.end() - (b_vec ? 1 : 2));
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  Shape batch(rank);
  std::vector<int64_t> a_stride(rank, 0), b_stride(rank, 0);
  int64_t sa = m_ * k_, sb = k_ * n_;
  for (size_t i = rank; i-- > 0;) {
    const size_t ia = i + a_batch.size(), ib = i + b_batch.size();  // >= rank when present
    const int64_t da = ia >= rank ? a_batch[ia - rank] : 1;
    const int64_t db = ib >= rank ? b_batch[ib - rank] : 1;
    if (da != db && da != 1 && db != 1)
      fail(where_of(cfg), "matmul: batch dimensions of {} and {} do not broadcast", shape_str(a),
           shape_str(b));
    batch[i] = da == 1 ? db : da;
    a_stride[i] = da == 1 ? 0 : sa;
    b_stride[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  Shape y = batch;
  if (!a_vec) y.push_back(m_);
  if (!b_vec) y.push_back(n_);
  check_output_shape(cfg, "matmul", 0, y);

  const int64_t batches = numel(batch);
  if (numel(b_batch) == 1 && numel(a_batch) == batches) {
    // B is shared and A is contiguous: fold the batch into M, one large sgemm.
    m_ *= batches;
    a_offsets_ = {0};
    b_offsets_ = {0};
    return;
  }
  a_offsets_.resize(batches);
  b_offsets_.resize(batches);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < rank; ++i) {
      oa += idx[i] * a_stride[i];
      ob += idx[i] * b_stride[i];
    }
    a_offsets_[t] = oa;
    b_offsets_[t] = ob;
    for (size_t i = rank; i-- > 0;) {  // odometer over the batch index
      if (++idx[i] < batch[i]) break;
      idx[i] = 0;
    }
  }
}

void MatMul::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* a = static_cast<const float*>(in[0]);
  const float* b = static_cast<const float*>(in[1]);
  float* y = static_cast<float*>(out[0]);
  if (m_ == 0 || n_ == 0) return;
  const int64_t batches = static_cast<int64_t>(a_offsets_.size());
  if (k_ == 0) {  // empty sum; sgemm rejects zero leading dimensions
    std::fill(y, y + batches * m_ * n_, 0.0f);
    return;
  }
  const int64_t ldb = trans_b_ == 'T' ? k_ : n_;
  for (int64_t t = 0; t < batches; ++t)
    dnnl_sgemm('N', trans_b_, m_, n_, k_, 1.0f, a + a_offsets_[t], k_, b + b_offsets_[t], ldb, 0.0f,
               y + t * m_ * n_, n_);
}

// The rows of A (all but its last dim) are one M; B is [N, K], read as its transpose.
class MatMulTransB final : public Kernel {
 public:
  explicit MatMulTransB(const KernelConfig& cfg) {
    check_arity(cfg, "matmul_tb", 2, 2, 1);
    check_dtypes(cfg, "matmul_tb", DType::f32);
    const Shape& a = cfg.inputs[0].shape;
    const Shape& b = cfg.inputs[1].shape;
    if (a.size() < 2 || b.size() != 2 || a.back() != b[1])
      fail(where_of(cfg), "matmul_tb: operands {} and {} must be [..., M, K] and [N, K]", shape_str(a), shape_str(b));
    Shape y(a.begin(), a.end() - 1);
    y.push_back(b[0]);
    check_output_shape(cfg, "matmul_tb", 0, y);
    impl_.m_ = numel(a) / std::max<int64_t>(a.back(), 1);
    if (a.back() == 0) impl_.m_ = numel(y) / std::max<int64_t>(b[0], 1);
    impl_.k_ = a.back();
    impl_.n_ = b[0];
    impl_.trans_b_ = 'T';
    impl_.a_offsets_ = {0};
    impl_.b_offsets_ = {0};
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override { impl_.run(ctx, in, out); }

 private:
  MatMul impl_;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul(const KernelConfig& cfg) {
  return std::make_unique<MatMul>(cfg);
}

std::unique_ptr<Kernel> make_matmul_tb(const KernelConfig& cfg) { return std::make_unique<MatMulTransB>(cfg); }

}  // namespace of::kernels::cpu
