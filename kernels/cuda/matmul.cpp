// SPDX-License-Identifier: Apache-2.0
// matmul and matmul_tb on the GPU: the CPU twin's geometry (kernels/rules.h), then one cuBLAS
// strided-batched sgemm when the batches sit at even strides (always, but for unusual broadcasts),
// else one sgemm per batch. Row-major products as cuBLAS's column-major ones: Y^T = op(B)^T A^T.
#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

// Whether offsets[t] == t * stride for every batch t; sets stride.
bool even_strides(const std::vector<int64_t>& offsets, int64_t& stride) {
  stride = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
  for (size_t t = 0; t < offsets.size(); ++t)
    if (offsets[t] != int64_t(t) * stride) return false;
  return true;
}

class MatMul final : public Kernel {
 public:
  MatMul(const KernelConfig& cfg, MatMulGeometry g) : g_(std::move(g)) {
    if (std::max({g_.m, g_.n, g_.k}) > int64_t(INT32_MAX) || g_.a_offsets.size() > size_t(INT32_MAX))
      fail(cpu::where_of(cfg), "matmul: [{},{}]x[{},{}] exceeds cuBLAS's 32-bit sizes", g_.m, g_.k, g_.k, g_.n);
    strided_ = even_strides(g_.a_offsets, stride_a_) && even_strides(g_.b_offsets, stride_b_);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const float*>(in[1]);
    auto* y = static_cast<float*>(out[0]);
    const int64_t batches = int64_t(g_.a_offsets.size()), m = g_.m, n = g_.n, k = g_.k;
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum
      launch_fill(y, 0.0f, batches * m * n, s.stream);
      s.check_launch("matmul");
      return;
    }
    // Row-major X is column-major X^T: Y^T = op(B)^T op(A)^T, a transposed operand's
    // column-major self transposed again.
    const cublasOperation_t op_b = g_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = g_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = int(g_.trans_b ? k : n), lda = int(g_.trans_a ? m : k);
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (strided_) {
      st = cublas().sgemm_strided_batched(s.blas, op_b, op_a, int(n), int(m), int(k), &one, b, ldb, stride_b_, a,
                                     lda, stride_a_, &zero, y, int(n), m * n, int(batches));
    } else {
      for (int64_t t = 0; t < batches && st == CUBLAS_STATUS_SUCCESS; ++t)
        st = cublas().sgemm(s.blas, op_b, op_a, int(n), int(m), int(k), &one, b + g_.b_offsets[size_t(t)], ldb,
                         a + g_.a_offsets[size_t(t)], lda, &zero, y + t * m * n, int(n));
    }
    if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("matmul: cublasSgemm", int(st));
  }

 private:
  MatMulGeometry g_;
  bool strided_ = false;
  int64_t stride_a_ = 0, stride_b_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul(const KernelConfig& cfg) { return std::make_unique<MatMul>(cfg, matmul_geometry(cfg)); }
std::unique_ptr<Kernel> make_matmul_tb(const KernelConfig& cfg) {
  return std::make_unique<MatMul>(cfg, matmul_tb_geometry(cfg));
}

}  // namespace of::kernels::cuda
