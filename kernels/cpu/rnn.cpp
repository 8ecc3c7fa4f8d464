// SPDX-License-Identifier: Apache-2.0
// rnn: ONNX RNN as torch exports nn.RNN, activation tanh or (attribute relu) relu:
//   H_t = f(X_t W^T + Wb + H_{t-1} R^T + Rb)
// per direction (the second of a bidirectional layer runs from the last step). Inputs X, W, R,
// then B and initial_h where has_bias / has_h0 say so (an absent initial state is zero). Outputs
// Y and Y_h; nothing is saved for the backward, which reads every H_t from Y.
// rnn_grad: backpropagation through time. Inputs X, W, R, Y, then dY, dY_h and initial_h where
// has_dy / has_dyh / has_h0 say so; outputs dX, dW, dR, dB, d initial_h.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/recurrent.h"
#include "kernels/recurrent_cells.h"

namespace of::kernels::cpu {

namespace {

class Rnn final : public Kernel {
 public:
  explicit Rnn(const KernelConfig& cfg) : c_(rnn_config(cfg)), s_(c_.s) {
    xw_.resize(size_t(s_.seq * s_.batch * s_.hidden));
    hr_.resize(size_t(s_.batch * s_.hidden));
    zero_.assign(size_t(s_.batch * s_.hidden), 0.0f);
  }

  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const RecurrentArgs args = recurrent_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *b = args.b, *h0 = args.h0;
    const int64_t S = s_.seq, N = s_.batch, H = s_.hidden, NH = N * H;
    for (int64_t d = 0; d < s_.dirs; ++d) {
      project_inputs(s_, d, x, w, b ? b + d * 2 * H : nullptr, nullptr, xw_.data());
      const float* rb = b ? b + d * 2 * H + H : nullptr;
      const float* h = h0 ? h0 + d * NH : zero_.data();
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = s_.time(d, step);
        project_hidden(s_, d, h, r, rb, hr_.data());
        const float* xt = xw_.data() + t * NH;
        float* ht = args.y + (t * s_.dirs + d) * NH;
        for (int64_t e = 0; e < NH; ++e) ht[e] = recurrent::rnn_cell(xt[e] + hr_[size_t(e)], c_.relu);
        h = ht;
      }
      std::memcpy(args.y_h + d * NH, h, size_t(NH) * sizeof(float));
    }
  }

 private:
  RecurrentConfig c_;
  RecurrentShape s_;
  std::vector<float> xw_, hr_, zero_;
};

class RnnGrad final : public Kernel {
 public:
  explicit RnnGrad(const KernelConfig& cfg) : c_(rnn_grad_config(cfg)), s_(c_.s) {
    da_.resize(size_t(s_.seq * s_.batch * s_.hidden));
    hprev_.resize(size_t(s_.seq * s_.batch * s_.hidden));
    zero_.assign(size_t(s_.batch * s_.hidden), 0.0f);
  }

  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const RecurrentGradArgs args = recurrent_grad_args(c_, in, out);
    const float *y = args.y, *dy = args.dy, *dyh = args.dy_h, *h0 = args.h0;
    float* dh = args.d_h0;  // dL/dH_t carried backwards; ends as d initial_h
    const int64_t S = s_.seq, N = s_.batch, H = s_.hidden, NH = N * H, D = s_.dirs;
    for (int64_t d = 0; d < D; ++d) {
      float* dhd = dh + d * NH;
      std::memcpy(dhd, dyh ? dyh + d * NH : zero_.data(), size_t(NH) * sizeof(float));
      for (int64_t step = S; step-- > 0;) {
        const int64_t t = s_.time(d, step);
        const int64_t tp = step > 0 ? s_.time(d, step - 1) : -1;
        const float* ht = y + (t * D + d) * NH;
        const float* hp = tp >= 0 ? y + (tp * D + d) * NH : h0 ? h0 + d * NH : zero_.data();
        float* da = da_.data() + t * NH;
        for (int64_t e = 0; e < NH; ++e)
          da[e] = recurrent::rnn_cell_grad(dhd[e] + (dy ? dy[(t * D + d) * NH + e] : 0.0f), ht[e], c_.relu);
        std::memcpy(hprev_.data() + t * NH, hp, size_t(NH) * sizeof(float));
        // H_{t-1} reaches H_t only through R: dL/dH_{t-1} = da R
        sgemm(false, false, N, H, H, da, H, args.r + d * H * H, H, 0.0f, dhd, H);
      }
      // the input and hidden sides share the pre-activation, and so its gradient
      weight_grads(s_, d, da_.data(), da_.data(), args.x, hprev_.data(), args.w, args.dx, args.dw, args.dr, args.db);
    }
  }

 private:
  RecurrentConfig c_;
  RecurrentShape s_;
  std::vector<float> da_, hprev_, zero_;
};

}  // namespace

std::unique_ptr<Kernel> make_rnn(const KernelConfig& cfg) { return std::make_unique<Rnn>(cfg); }
std::unique_ptr<Kernel> make_rnn_grad(const KernelConfig& cfg) { return std::make_unique<RnnGrad>(cfg); }

}  // namespace of::kernels::cpu
