// SPDX-License-Identifier: Apache-2.0
#include "kernels/cuda/recurrent.h"

#include <algorithm>
#include <climits>

#include "kernels/cpu/check.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

void sgemm(DeviceStream& s, bool t_a, bool t_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* y, int64_t ldy) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: Y = beta * Y, as cblas leaves it
    if (beta == 0.0f)
      for (int64_t r = 0; r < m; ++r) launch_fill(y + r * ldy, 0.0f, n, s.stream);
    return;
  }
  // Column-major cuBLAS computes Y^T = op(B)^T op(A)^T, which is the row-major Y.
  const float one = 1.0f;
  const cublasStatus_t st = cublas().sgemm(s.blas, t_b ? CUBLAS_OP_T : CUBLAS_OP_N, t_a ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m),
                                           int(k), &one, b, int(ldb), a, int(lda), &beta, y, int(ldy));
  if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("recurrent: cublasSgemm", int(st));
}

void project_inputs(DeviceStream& s, const cpu::RecurrentShape& shape, int64_t d, const float* x, const float* w, const float* b1,
                    const float* b2, float* xw) {
  const int64_t rows = shape.seq * shape.batch, GH = shape.gh(), I = shape.input;
  sgemm(s, false, true, rows, GH, I, x, I, w + d * GH * I, I, 0.0f, xw, GH);
  if (b1) launch_add_bias_rows(xw, b1, b2, rows, GH, s.stream);
}

void project_hidden(DeviceStream& s, const cpu::RecurrentShape& shape, int64_t d, const float* h, const float* r, const float* rb,
                    float* hr) {
  const int64_t N = shape.batch, H = shape.hidden, GH = shape.gh();
  launch_fill_rows(hr, rb, N, GH, s.stream);
  sgemm(s, false, true, N, GH, H, h, H, r + d * GH * H, H, 1.0f, hr, GH);
}

void weight_grads(DeviceStream& s, const cpu::RecurrentShape& shape, int64_t d, const float* dax, const float* dah, const float* x,
                  const float* hprev, const float* w, float* dx, float* dw, float* dr, float* db) {
  const int64_t rows = shape.seq * shape.batch, GH = shape.gh(), I = shape.input, H = shape.hidden;
  sgemm(s, false, false, rows, I, GH, dax, GH, w + d * GH * I, I, d == 0 ? 0.0f : 1.0f, dx, I);
  sgemm(s, true, false, GH, I, rows, dax, GH, x, I, 0.0f, dw + d * GH * I, I);
  sgemm(s, true, false, GH, H, rows, dah, GH, hprev, H, 0.0f, dr + d * GH * H, H);
  launch_bias_grad(dax, dah, db + d * 2 * GH, rows, GH, s.stream);
}

void copy_floats(DeviceStream& s, float* to, const float* from, int64_t count) {
  if (count <= 0) return;
  const cudaError_t e = cudaMemcpyAsync(to, from, size_t(count) * sizeof(float), cudaMemcpyDeviceToDevice, s.stream);
  if (e != cudaSuccess) s.note_failure("recurrent: cudaMemcpyAsync", int(e));
}

void check_blas_sizes(const KernelConfig& cfg, const cpu::RecurrentShape& s) {
  if (std::max({s.seq * s.batch, s.gh(), s.input, s.hidden}) > int64_t(INT_MAX))
    fail(cpu::where_of(cfg), "recurrent layer of {} steps x {} rows, {} gates of {} exceeds cuBLAS's 32-bit sizes", s.seq, s.batch,
         s.gates, s.hidden);
}

}  // namespace of::kernels::cuda
