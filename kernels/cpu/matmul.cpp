// SPDX-License-Identifier: Apache-2.0
// matmul (ONNX MatMul, numpy semantics): 1-D operands are promoted and then squeezed, batch
// dimensions broadcast. One product per batch (oneDNN's matmul primitive, gemm_dnnl.cpp, or
// dnnl_sgemm), with offsets precomputed at prepare time.
// matmul_tb: A [..., M, K] times the transpose of a 2-D B [N, K] (a linear layer's weight as
// torch stores it), one sgemm over all rows: the weight is read transposed, never copied.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class MatMul final : public Kernel {
 public:
  explicit MatMul(const MatMulGeometry& g);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  int64_t m_ = 0, n_ = 0, k_ = 0;
  char trans_a_ = 'N', trans_b_ = 'N';
  std::vector<int64_t> a_offsets_, b_offsets_;  // per batch, in elements; Y's is i*M*N
};

MatMul::MatMul(const MatMulGeometry& g)
    : m_(g.m), n_(g.n), k_(g.k), trans_a_(g.trans_a ? 'T' : 'N'), trans_b_(g.trans_b ? 'T' : 'N'), a_offsets_(g.a_offsets), b_offsets_(g.b_offsets) {}

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
  const int64_t lda = trans_a_ == 'T' ? m_ : k_, ldb = trans_b_ == 'T' ? k_ : n_;
  for (int64_t t = 0; t < batches; ++t)
    dnnl_sgemm(trans_a_, trans_b_, m_, n_, k_, 1.0f, a + a_offsets_[t], lda, b + b_offsets_[t], ldb, 0.0f,
               y + t * m_ * n_, n_);
}

}  // namespace

// oneDNN's matmul primitive where it applies (gemm_dnnl.cpp: no per-call mallocs), else sgemm
// per batch; the OpenBLAS backend's matmuls stay on dnnl_sgemm, as before.
std::unique_ptr<Kernel> make_matmul(const KernelConfig& cfg) {
  const MatMulGeometry g = matmul_geometry(cfg);
  if (cfg.gemm == GemmBackend::onednn)
    if (auto primitive = make_dnnl_matmul(cfg, g)) return primitive;
  return std::make_unique<MatMul>(g);
}

// matmul_tb: the rows of A (all but its last dim) are one M; B is [N, K], read as its transpose.
std::unique_ptr<Kernel> make_matmul_tb(const KernelConfig& cfg) {
  const MatMulGeometry g = matmul_tb_geometry(cfg);
  if (cfg.gemm == GemmBackend::onednn)
    if (auto primitive = make_dnnl_matmul(cfg, g)) return primitive;
  return std::make_unique<MatMul>(g);
}

}  // namespace of::kernels::cpu
