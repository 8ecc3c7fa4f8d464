// SPDX-License-Identifier: Apache-2.0
// gemm (ONNX Gemm) on the GPU: Y[M,N] = alpha * op(A) * op(B) + beta * C with C broadcast, then
// an optional fused ReLU. cuBLAS is column-major, so the row-major product is computed as
// Y^T = op(B)^T * op(A)^T, which reads the same bytes with the operands swapped.
#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

class Gemm final : public Kernel {
 public:
  Gemm(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "gemm", 2, 3, 1);
    cpu::check_dtypes(cfg, "gemm", DType::f32);
    const Shape& a = cfg.inputs[0].shape;
    const Shape& b = cfg.inputs[1].shape;
    if (a.size() != 2 || b.size() != 2)
      fail(where_of(cfg), "gemm: A {} and B {} must be 2-D", shape_str(a), shape_str(b));
    ta_ = cfg.attrs.get_int("trans_a", 0) != 0;
    tb_ = cfg.attrs.get_int("trans_b", 0) != 0;
    m_ = ta_ ? a[1] : a[0];
    k_ = ta_ ? a[0] : a[1];
    n_ = tb_ ? b[0] : b[1];
    if ((tb_ ? b[1] : b[0]) != k_)
      fail(where_of(cfg), "gemm: inner dimensions differ: A {} (trans_a={}), B {} (trans_b={})", shape_str(a),
           int(ta_), shape_str(b), int(tb_));
    cpu::check_output_shape(cfg, "gemm", 0, {m_, n_});
    if (std::max({m_, n_, k_, a[1], b[1]}) > int64_t(INT32_MAX))
      fail(where_of(cfg), "gemm: a dimension of A {} or B {} exceeds cuBLAS's 32-bit sizes", shape_str(a), shape_str(b));
    lda_ = std::max<int64_t>(1, a[1]);
    ldb_ = std::max<int64_t>(1, b[1]);
    relu_ = cpu::fused_relu(cfg, "gemm");
    alpha_ = cfg.attrs.get_float("alpha", 1.0f);
    beta_ = cfg.attrs.get_float("beta", 1.0f);
    has_c_ = cfg.inputs.size() == 3 && beta_ != 0.0f;
    if (cfg.inputs.size() == 3) {
      const Shape& c = cfg.inputs[2].shape;
      if (c.size() > 2) fail(where_of(cfg), "gemm: C {} has rank > 2", shape_str(c));
      const int64_t rows = c.size() == 2 ? c[0] : 1;
      const int64_t cols = c.empty() ? 1 : c.back();
      if ((rows != 1 && rows != m_) || (cols != 1 && cols != n_))
        fail(where_of(cfg), "gemm: C {} does not broadcast to [{},{}]", shape_str(c), m_, n_);
      c_row_stride_ = rows == 1 ? 0 : cols;
      c_col_stride_ = cols == 1 ? 0 : 1;
    }
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const float*>(in[1]);
    auto* y = static_cast<float*>(out[0]);
    float beta = 0.0f;
    if (has_c_) {  // Y = beta*C first, then the product adds to it (beta 1), as the CPU twin
      launch_fill_broadcast(static_cast<const float*>(in[2]), c_row_stride_, c_col_stride_, beta_, y, m_, n_, s.stream);
      beta = 1.0f;
    }
    if (m_ > 0 && n_ > 0) {
      if (k_ == 0) {
        if (!has_c_) launch_fill(y, 0.0f, m_ * n_, s.stream);
      } else {
        const cublasStatus_t st =
            cublasSgemm(s.blas, tb_ ? CUBLAS_OP_T : CUBLAS_OP_N, ta_ ? CUBLAS_OP_T : CUBLAS_OP_N, int(n_), int(m_),
                        int(k_), &alpha_, b, int(ldb_), a, int(lda_), &beta, y, int(n_));
        if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("gemm: cublasSgemm", int(st));
      }
      if (relu_) launch_unary(UnaryOp::relu, y, y, m_ * n_, s.stream);
    }
    s.check_launch("gemm");
  }

 private:
  bool ta_ = false, tb_ = false, has_c_ = false, relu_ = false;
  int64_t m_ = 0, n_ = 0, k_ = 0, lda_ = 1, ldb_ = 1;
  float alpha_ = 1, beta_ = 1;
  int64_t c_row_stride_ = 0, c_col_stride_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm(const KernelConfig& cfg) { return std::make_unique<Gemm>(cfg); }

}  // namespace of::kernels::cuda
