// SPDX-License-Identifier: Apache-2.0
// gru: ONNX GRU with linear_before_reset = 1 (torch's nn.GRU export) and the default
// activations, gates z, r, h:
//   z, r = sigmoid(X_t W_{z,r}^T + Wb_{z,r} + H_{t-1} R_{z,r}^T + Rb_{z,r})
//   Q = H_{t-1} R_h^T + Rb_h;  n = tanh(X_t W_h^T + Wb_h + r * Q);  H_t = (1 - z) * n + z * H_{t-1}
// per direction (the second of a bidirectional layer runs from the last step). Inputs X, W, R,
// then B and initial_h where has_bias / has_h0 say so (an absent initial state is zero). Outputs
// Y, Y_h, and in training the gates (z, r, n) and Q, which the backward reads.
// gru_grad: backpropagation through time. Inputs X, W, R, Y, gates, Q, then dY, dY_h and
// initial_h where has_dy / has_dyh / has_h0 say so; outputs dX, dW, dR, dB, d initial_h.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/recurrent.h"
#include "kernels/recurrent_cells.h"

namespace of::kernels::cpu {

namespace {

class Gru final : public Kernel {
 public:
  explicit Gru(const KernelConfig& cfg) {
    c_ = gru_config(cfg);
    s_ = c_.s;
    xw_.resize(size_t(s_.seq * s_.batch * s_.gh()));
    hr_.resize(size_t(s_.batch * s_.gh()));
    zero_.assign(size_t(s_.batch * s_.hidden), 0.0f);
  }

  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const RecurrentArgs args = recurrent_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *b = args.b, *h0 = args.h0;
    float *y = args.y, *yh = args.y_h;
    const int64_t S = s_.seq, N = s_.batch, H = s_.hidden, GH = s_.gh(), NH = N * H;
    for (int64_t d = 0; d < s_.dirs; ++d) {
      project_inputs(s_, d, x, w, b ? b + d * 2 * GH : nullptr, nullptr, xw_.data());
      const float* rb = b ? b + d * 2 * GH + GH : nullptr;
      const float* h = h0 ? h0 + d * NH : zero_.data();
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = s_.time(d, step);
        project_hidden(s_, d, h, r, rb, hr_.data());
        const float* xt = xw_.data() + t * N * GH;
        float* ht = y + (t * s_.dirs + d) * NH;
        float* gates = args.gates ? args.gates + (d * S + t) * N * GH : nullptr;
        float* qs = args.states ? args.states + (d * S + t) * NH : nullptr;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t j = 0; j < H; ++j)
            ht[n * H + j] = recurrent::gru_cell(xt + n * GH, hr_.data() + n * GH, H, j, h[n * H + j], gates ? gates + n * GH : nullptr,
                                                qs ? qs + n * H + j : nullptr);
        h = ht;
      }
      std::memcpy(yh + d * NH, h, size_t(NH) * sizeof(float));
    }
  }

 private:
  RecurrentConfig c_;
  RecurrentShape s_;
  std::vector<float> xw_, hr_, zero_;
};

class GruGrad final : public Kernel {
 public:
  explicit GruGrad(const KernelConfig& cfg) {
    c_ = gru_grad_config(cfg);
    s_ = c_.s;
    dax_.resize(size_t(s_.seq * s_.batch * s_.gh()));
    dah_.resize(size_t(s_.seq * s_.batch * s_.gh()));
    hprev_.resize(size_t(s_.seq * s_.batch * s_.hidden));
    zero_.assign(size_t(s_.batch * s_.hidden), 0.0f);
  }

  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const RecurrentGradArgs args = recurrent_grad_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *y = args.y, *gates = args.gates, *qs = args.states;
    const float *dy = args.dy, *dyh = args.dy_h, *h0 = args.h0;
    float *dx = args.dx, *dw = args.dw, *dr = args.dr, *db = args.db;
    float* dh = args.d_h0;  // dL/dH_t carried backwards; ends as d initial_h
    const int64_t S = s_.seq, N = s_.batch, H = s_.hidden, GH = s_.gh(), NH = N * H, D = s_.dirs;
    for (int64_t d = 0; d < D; ++d) {
      float* dhd = dh + d * NH;
      std::memcpy(dhd, dyh ? dyh + d * NH : zero_.data(), size_t(NH) * sizeof(float));
      for (int64_t step = S; step-- > 0;) {
        const int64_t t = s_.time(d, step);
        const int64_t tp = step > 0 ? s_.time(d, step - 1) : -1;
        const float* hp = tp >= 0 ? y + (tp * D + d) * NH : h0 ? h0 + d * NH : zero_.data();
        const float* g = gates + (d * S + t) * N * GH;
        const float* q = qs + (d * S + t) * NH;
        float* dax = dax_.data() + t * N * GH;
        float* dah = dah_.data() + t * N * GH;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t j = 0; j < H; ++j) {
            const int64_t e = n * H + j;
            const float dht = dhd[e] + (dy ? dy[(t * D + d) * NH + e] : 0.0f);
            // H_t's direct dependence on H_{t-1}; the gates' part is added below
            dhd[e] = recurrent::gru_cell_grad(g + n * GH, H, j, dht, hp[e], q[e], dax + n * GH, dah + n * GH);
          }
        std::memcpy(hprev_.data() + t * NH, hp, size_t(NH) * sizeof(float));
        sgemm(false, false, N, H, GH, dah, GH, r + d * GH * H, H, 1.0f, dhd, H);
      }
      weight_grads(s_, d, dax_.data(), dah_.data(), x, hprev_.data(), w, dx, dw, dr, db);
    }
  }

 private:
  RecurrentConfig c_;
  RecurrentShape s_;
  std::vector<float> dax_, dah_, hprev_, zero_;
};

}  // namespace

std::unique_ptr<Kernel> make_gru(const KernelConfig& cfg) { return std::make_unique<Gru>(cfg); }
std::unique_ptr<Kernel> make_gru_grad(const KernelConfig& cfg) { return std::make_unique<GruGrad>(cfg); }

}  // namespace of::kernels::cpu
