// SPDX-License-Identifier: Apache-2.0
// lstm: ONNX LSTM (torch's nn.LSTM export) with the default activations, gates i, o, f, c:
//   A = X_t W^T + H_{t-1} R^T + Wb + Rb;  i, o, f = sigmoid(A_i, A_o, A_f), c = tanh(A_c)
//   C_t = f * C_{t-1} + i * c;  H_t = o * tanh(C_t)
// per direction (the second of a bidirectional layer runs from the last step). Inputs X, W, R,
// then B, initial_h, initial_c where attributes has_bias / has_h0 / has_c0 say so (absent initial
// states are zero). Outputs Y, Y_h, Y_c, and in training the gates and cells the backward reads.
// lstm_grad: backpropagation through time. Inputs X, W, R, Y, gates, cells, then dY, dY_h, dY_c,
// initial_h, initial_c where has_dy / has_dyh / has_dyc / has_h0 / has_c0 say so (an absent
// gradient is zero); outputs dX, dW, dR, dB (both halves equal: each bias is added once),
// d initial_h, d initial_c. The input projections of all steps are one sgemm each way.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/recurrent.h"
#include "kernels/recurrent_cells.h"

namespace of::kernels::cpu {

namespace {

class Lstm final : public Kernel {
 public:
  explicit Lstm(const KernelConfig& cfg) {
    c_ = lstm_config(cfg);
    s_ = c_.s;
    xw_.resize(size_t(s_.seq * s_.batch * s_.gh()));
    zero_.assign(size_t(s_.batch * s_.hidden), 0.0f);
  }

  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const RecurrentArgs args = recurrent_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *b = args.b, *h0 = args.h0, *c0 = args.c0;
    float *y = args.y, *yh = args.y_h, *yc = args.y_c;
    const int64_t S = s_.seq, N = s_.batch, H = s_.hidden, GH = s_.gh(), NH = N * H;
    for (int64_t d = 0; d < s_.dirs; ++d) {
      // Every step's input projection plus both biases, in one product.
      project_inputs(s_, d, x, w, b ? b + d * 2 * GH : nullptr, b ? b + d * 2 * GH + GH : nullptr, xw_.data());
      float* c = yc + d * NH;  // the running cell state, ending as Y_c
      std::memcpy(c, c0 ? c0 + d * NH : zero_.data(), size_t(NH) * sizeof(float));
      const float* h = h0 ? h0 + d * NH : zero_.data();
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = s_.time(d, step);
        float* a = xw_.data() + t * N * GH;  // becomes the pre-activations of step t
        sgemm(false, true, N, GH, H, h, H, r + d * GH * H, H, 1.0f, a, GH);
        float* ht = y + (t * s_.dirs + d) * NH;
        float* gates = args.gates ? args.gates + ((d * S + t) * N) * GH : nullptr;
        float* cells = args.states ? args.states + (d * S + t) * NH : nullptr;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t j = 0; j < H; ++j) {
            float& cell = c[n * H + j];
            ht[n * H + j] = recurrent::lstm_cell(a + n * GH, H, j, cell, gates ? gates + n * GH : nullptr);
            if (cells) cells[n * H + j] = cell;
          }
        h = ht;
      }
      std::memcpy(yh + d * NH, h, size_t(NH) * sizeof(float));
    }
  }

 private:
  RecurrentConfig c_;
  RecurrentShape s_;
  std::vector<float> xw_, zero_;
};

class LstmGrad final : public Kernel {
 public:
  explicit LstmGrad(const KernelConfig& cfg) {
    c_ = lstm_grad_config(cfg);
    s_ = c_.s;
    da_.resize(size_t(s_.seq * s_.batch * s_.gh()));
    hprev_.resize(size_t(s_.seq * s_.batch * s_.hidden));
    dh_.resize(size_t(s_.batch * s_.hidden));
    zero_.assign(size_t(s_.batch * s_.hidden), 0.0f);
  }

  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const RecurrentGradArgs args = recurrent_grad_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *y = args.y, *gates = args.gates, *cells = args.states;
    const float *dy = args.dy, *dyh = args.dy_h, *dyc = args.dy_c, *h0 = args.h0, *c0 = args.c0;
    float *dx = args.dx, *dw = args.dw, *dr = args.dr, *db = args.db, *dh0 = args.d_h0, *dc0 = args.d_c0;
    const int64_t S = s_.seq, N = s_.batch, H = s_.hidden, GH = s_.gh(), NH = N * H, D = s_.dirs;
    for (int64_t d = 0; d < D; ++d) {
      float* dc = dc0 + d * NH;  // dL/dC_t, carried backwards; ends as d initial_c
      std::memcpy(dh_.data(), dyh ? dyh + d * NH : zero_.data(), size_t(NH) * sizeof(float));
      std::memcpy(dc, dyc ? dyc + d * NH : zero_.data(), size_t(NH) * sizeof(float));
      for (int64_t step = S; step-- > 0;) {
        const int64_t t = s_.time(d, step);
        const int64_t tp = step > 0 ? s_.time(d, step - 1) : -1;
        const float* hp = tp >= 0 ? y + (tp * D + d) * NH : h0 ? h0 + d * NH : zero_.data();
        const float* cp = tp >= 0 ? cells + (d * S + tp) * NH : c0 ? c0 + d * NH : zero_.data();
        const float* g = gates + (d * S + t) * N * GH;
        const float* ct = cells + (d * S + t) * NH;
        float* da = da_.data() + t * N * GH;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t j = 0; j < H; ++j) {
            const int64_t e = n * H + j;
            const float dh = dh_[size_t(e)] + (dy ? dy[(t * D + d) * NH + e] : 0.0f);
            recurrent::lstm_cell_grad(g + n * GH, H, j, dh, ct[e], cp[e], dc[e], da + n * GH);
          }
        std::memcpy(hprev_.data() + t * NH, hp, size_t(NH) * sizeof(float));
        sgemm(false, false, N, H, GH, da, GH, r + d * GH * H, H, 0.0f, dh_.data(), H);
      }
      std::memcpy(dh0 + d * NH, dh_.data(), size_t(NH) * sizeof(float));
      weight_grads(s_, d, da_.data(), da_.data(), x, hprev_.data(), w, dx, dw, dr, db);
    }
  }

 private:
  RecurrentConfig c_;
  RecurrentShape s_;
  std::vector<float> da_, hprev_, dh_, zero_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm(const KernelConfig& cfg) { return std::make_unique<Lstm>(cfg); }
std::unique_ptr<Kernel> make_lstm_grad(const KernelConfig& cfg) { return std::make_unique<LstmGrad>(cfg); }

}  // namespace of::kernels::cpu
