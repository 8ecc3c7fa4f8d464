// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/recurrent.h"

#include <cblas.h>

#include "common/error.h"
#include "kernels/cpu/check.h"

namespace of::kernels::cpu {

RecurrentShape recurrent_shape(const KernelConfig& cfg, const char* kernel, int64_t gates, const TensorDesc& x,
                               const TensorDesc& w, const TensorDesc& r, const TensorDesc* b) {
  RecurrentShape s;
  s.gates = gates;
  s.reverse = cfg.attrs.get_int("reverse", 0) != 0;
  if (x.shape.size() != 3) fail(where_of(cfg), "{}: X has shape {}, expected [seq, batch, input]", kernel, shape_str(x.shape));
  if (w.shape.size() != 3 || r.shape.size() != 3)
    fail(where_of(cfg), "{}: W {} and R {} must have rank 3", kernel, shape_str(w.shape), shape_str(r.shape));
  s.seq = x.shape[0];
  s.batch = x.shape[1];
  s.input = x.shape[2];
  s.dirs = w.shape[0];
  if (s.dirs != 1 && s.dirs != 2) fail(where_of(cfg), "{}: W {} has {} directions, expected 1 or 2", kernel, shape_str(w.shape), s.dirs);
  if (s.reverse && s.dirs != 1) fail(where_of(cfg), "{}: a reverse layer has one direction, W has {}", kernel, s.dirs);
  if (w.shape[1] % gates != 0 || w.shape[1] == 0)
    fail(where_of(cfg), "{}: W {} does not hold {} gates", kernel, shape_str(w.shape), gates);
  s.hidden = w.shape[1] / gates;
  if (w.shape != Shape{s.dirs, s.gh(), s.input})
    fail(where_of(cfg), "{}: W has shape {}, expected {} for X {}", kernel, shape_str(w.shape),
         shape_str({s.dirs, s.gh(), s.input}), shape_str(x.shape));
  if (r.shape != Shape{s.dirs, s.gh(), s.hidden})
    fail(where_of(cfg), "{}: R has shape {}, expected {}", kernel, shape_str(r.shape), shape_str({s.dirs, s.gh(), s.hidden}));
  s.has_bias = b != nullptr;
  if (b && b->shape != Shape{s.dirs, 2 * s.gh()})
    fail(where_of(cfg), "{}: B has shape {}, expected {}", kernel, shape_str(b->shape), shape_str({s.dirs, 2 * s.gh()}));
  return s;
}

void sgemm(bool t_a, bool t_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* y, int64_t ldy) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, t_a ? CblasTrans : CblasNoTrans, t_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              1.0f, a, int(lda), b, int(ldb), beta, y, int(ldy));
}

}  // namespace of::kernels::cpu
