// SPDX-License-Identifier: Apache-2.0
// gemm (ONNX Gemm): Y[M,N] = alpha * op(A) * op(B) + beta * C, with C unidirectionally
// broadcast to [M,N]. oneDNN's matmul primitive does the product (matmul_dnnl.cpp), or here
// OpenBLAS's sgemm when the configuration asks for PyTorch's summation order
// (GemmBackend::openblas); an empty product (M, N or K zero) stays here too.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Gemm final : public Kernel {
 public:
  Gemm(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  char trans_a_ = 'N', trans_b_ = 'N';
  int64_t m_ = 0, n_ = 0, k_ = 0, lda_ = 1, ldb_ = 1;
  float alpha_ = 1, beta_ = 1;
  bool has_c_ = false, relu_ = false, openblas_ = false;
  int64_t c_row_stride_ = 0, c_col_stride_ = 0;  // 0 along broadcast axes
};

Gemm::Gemm(const KernelConfig& cfg) {
  const GemmGeometry g = gemm_geometry(cfg);
  trans_a_ = g.trans_a ? 'T' : 'N';
  trans_b_ = g.trans_b ? 'T' : 'N';
  m_ = g.m;
  n_ = g.n;
  k_ = g.k;
  lda_ = g.lda;
  ldb_ = g.ldb;
  relu_ = g.relu;
  alpha_ = g.alpha;
  beta_ = g.beta;
  has_c_ = g.has_c;
  c_row_stride_ = g.c_row_stride;
  c_col_stride_ = g.c_col_stride;
  openblas_ = cfg.gemm == GemmBackend::openblas;
}

void Gemm::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* a = static_cast<const float*>(in[0]);
  const float* b = static_cast<const float*>(in[1]);
  float* y = static_cast<float*>(out[0]);
  float beta = 0.0f;
  if (has_c_) {
    // Fill Y with beta*C first so that sgemm's own beta=1 adds the product to it.
    const float* c = static_cast<const float*>(in[2]);
    for (int64_t i = 0; i < m_; ++i) {
      const float* c_row = c + i * c_row_stride_;
      float* y_row = y + i * n_;
      for (int64_t j = 0; j < n_; ++j) y_row[j] = beta_ * c_row[j * c_col_stride_];
    }
    beta = 1.0f;
  }
  if (m_ == 0 || n_ == 0) return;
  if (k_ == 0) {  // empty product: Y is beta*C (or zero); sgemm rejects K=0 leading dims
    if (!has_c_) std::fill(y, y + m_ * n_, 0.0f);
  } else {
    if (openblas_)
      cblas_sgemm(CblasRowMajor, trans_a_ == 'T' ? CblasTrans : CblasNoTrans, trans_b_ == 'T' ? CblasTrans : CblasNoTrans,
                  int(m_), int(n_), int(k_), alpha_, a, int(lda_), b, int(ldb_), beta, y, int(n_));
    else
      dnnl_sgemm(trans_a_, trans_b_, m_, n_, k_, alpha_, a, lda_, b, ldb_, beta, y, n_);
  }
  if (relu_) relu_inplace(y, m_ * n_);
}

}  // namespace

std::unique_ptr<Kernel> make_gemm(const KernelConfig& cfg) {
  auto checked = std::make_unique<Gemm>(cfg);  // checks every shape and attribute
  if (cfg.gemm == GemmBackend::onednn) {
    if (auto packed = make_packed_gemm(cfg)) return packed;
    if (auto primitive = make_dnnl_gemm(cfg)) return primitive;
  }
  return checked;
}

}  // namespace of::kernels::cpu
