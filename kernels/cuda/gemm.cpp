// SPDX-License-Identifier: Apache-2.0
// gemm (ONNX Gemm) on the GPU: Y[M,N] = alpha * op(A) * op(B) + beta * C with C broadcast, then
// an optional fused ReLU. cuBLAS is column-major, so the row-major product is computed as
// Y^T = op(B)^T * op(A)^T, which reads the same bytes with the operands swapped.
#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Gemm final : public Kernel {
 public:
  Gemm(const KernelConfig& cfg) : g_(gemm_geometry(cfg)) {
    if (std::max({g_.m, g_.n, g_.k, g_.lda, g_.ldb}) > int64_t(INT32_MAX))
      fail(cpu::where_of(cfg), "gemm: [{},{}]x[{},{}] exceeds cuBLAS's 32-bit sizes", g_.m, g_.k, g_.k, g_.n);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const float*>(in[1]);
    auto* y = static_cast<float*>(out[0]);
    const int64_t m = g_.m, n = g_.n, k = g_.k;
    float beta = 0.0f;
    if (g_.has_c) {  // Y = beta*C first, then the product adds to it (beta 1), as the CPU twin
      launch_fill_broadcast(static_cast<const float*>(in[2]), g_.c_row_stride, g_.c_col_stride, g_.beta, y, m, n,
                            s.stream);
      beta = 1.0f;
    }
    if (m > 0 && n > 0) {
      if (k == 0) {
        if (!g_.has_c) launch_fill(y, 0.0f, m * n, s.stream);
      } else {
        const cublasStatus_t st = cublas().sgemm(s.blas, g_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                              g_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m), int(k), &g_.alpha,
                                              b, int(g_.ldb), a, int(g_.lda), &beta, y, int(n));
        if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("gemm: cublasSgemm", int(st));
      }
      if (g_.relu) launch_unary(UnaryOp::relu, y, y, m * n, s.stream);
    }
    s.check_launch("gemm");
  }

 private:
  GemmGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_gemm(const KernelConfig& cfg) { return std::make_unique<Gemm>(cfg); }

}  // namespace of::kernels::cuda
