// SPDX-License-Identifier: Apache-2.0
// lstm and lstm_grad on the GPU: the CPU twins' algorithm (kernels/cpu/lstm.cpp) with cuBLAS
// products (every step's input projection in one, then one per step for the hidden state) and
// the cell math of kernels/recurrent_cells.h, one thread per element of each step. Config rules
// shared with the CPU twin (cpu::lstm_config, cpu::lstm_grad_config).
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/recurrent.h"

namespace of::kernels::cuda {

namespace {

class Lstm final : public Kernel {
 public:
  explicit Lstm(const KernelConfig& cfg)
      : c_(cpu::lstm_config(cfg)), xw_(size_t(c_.s.seq * c_.s.batch * c_.s.gh()) * sizeof(float)),
        zero_(size_t(c_.s.batch * c_.s.hidden) * sizeof(float)) {
    check_blas_sizes(cfg, c_.s);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& st = *ctx.stream;
    const cpu::RecurrentShape& s = c_.s;
    const cpu::RecurrentArgs args = cpu::recurrent_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *b = args.b, *h0 = args.h0, *c0 = args.c0;
    float *y = args.y, *yh = args.y_h, *yc = args.y_c;
    const int64_t S = s.seq, N = s.batch, H = s.hidden, GH = s.gh(), NH = N * H;
    auto* xw = static_cast<float*>(xw_.get());
    auto* zero = static_cast<float*>(zero_.get());
    launch_fill(zero, 0.0f, NH, st.stream);
    for (int64_t d = 0; d < s.dirs; ++d) {
      project_inputs(st, s, d, x, w, b ? b + d * 2 * GH : nullptr, b ? b + d * 2 * GH + GH : nullptr, xw);
      float* c = yc + d * NH;  // the running cell state, ending as Y_c
      copy_floats(st, c, c0 ? c0 + d * NH : zero, NH);
      const float* h = h0 ? h0 + d * NH : zero;
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = s.time(d, step);
        float* a = xw + t * N * GH;  // becomes the pre-activations of step t
        sgemm(st, false, true, N, GH, H, h, H, r + d * GH * H, H, 1.0f, a, GH);
        float* ht = y + (t * s.dirs + d) * NH;
        float* gates = args.gates ? args.gates + (d * S + t) * N * GH : nullptr;
        float* cells = args.states ? args.states + (d * S + t) * NH : nullptr;
        launch_lstm_step(a, c, ht, gates, cells, N, H, st.stream);
        h = ht;
      }
      copy_floats(st, yh + d * NH, h, NH);
    }
    st.check_launch("lstm");
  }

 private:
  cpu::RecurrentConfig c_;
  DeviceBuffer xw_, zero_;
};

class LstmGrad final : public Kernel {
 public:
  explicit LstmGrad(const KernelConfig& cfg)
      : c_(cpu::lstm_grad_config(cfg)), da_(bytes(c_.s.seq * c_.s.batch * c_.s.gh())), hprev_(bytes(c_.s.seq * c_.s.batch * c_.s.hidden)),
        dh_(bytes(c_.s.batch * c_.s.hidden)), zero_(bytes(c_.s.batch * c_.s.hidden)) {
    check_blas_sizes(cfg, c_.s);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& st = *ctx.stream;
    const cpu::RecurrentShape& s = c_.s;
    const cpu::RecurrentGradArgs args = cpu::recurrent_grad_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *y = args.y, *gates = args.gates, *cells = args.states;
    const float *dy = args.dy, *dyh = args.dy_h, *dyc = args.dy_c, *h0 = args.h0, *c0 = args.c0;
    float *dx = args.dx, *dw = args.dw, *dr = args.dr, *db = args.db, *dh0 = args.d_h0, *dc0 = args.d_c0;
    const int64_t S = s.seq, N = s.batch, H = s.hidden, GH = s.gh(), NH = N * H, D = s.dirs;
    auto* da = static_cast<float*>(da_.get());
    auto* hprev = static_cast<float*>(hprev_.get());
    auto* dh = static_cast<float*>(dh_.get());
    auto* zero = static_cast<float*>(zero_.get());
    launch_fill(zero, 0.0f, NH, st.stream);
    for (int64_t d = 0; d < D; ++d) {
      float* dc = dc0 + d * NH;  // dL/dC_t, carried backwards; ends as d initial_c
      copy_floats(st, dh, dyh ? dyh + d * NH : zero, NH);
      copy_floats(st, dc, dyc ? dyc + d * NH : zero, NH);
      for (int64_t step = S; step-- > 0;) {
        const int64_t t = s.time(d, step);
        const int64_t tp = step > 0 ? s.time(d, step - 1) : -1;
        const float* hp = tp >= 0 ? y + (tp * D + d) * NH : h0 ? h0 + d * NH : zero;
        const float* cp = tp >= 0 ? cells + (d * S + tp) * NH : c0 ? c0 + d * NH : zero;
        float* da_t = da + t * N * GH;
        launch_lstm_step_grad(gates + (d * S + t) * N * GH, cells + (d * S + t) * NH, cp, dy ? dy + (t * D + d) * NH : nullptr, dh, dc, da_t,
                              N, H, st.stream);
        copy_floats(st, hprev + t * NH, hp, NH);
        sgemm(st, false, false, N, H, GH, da_t, GH, r + d * GH * H, H, 0.0f, dh, H);
      }
      copy_floats(st, dh0 + d * NH, dh, NH);
      weight_grads(st, s, d, da, da, x, hprev, w, dx, dw, dr, db);
    }
    st.check_launch("lstm_grad");
  }

 private:
  static size_t bytes(int64_t floats) { return size_t(floats) * sizeof(float); }
  cpu::RecurrentConfig c_;
  DeviceBuffer da_, hprev_, dh_, zero_;
};

}  // namespace

std::unique_ptr<Kernel> make_lstm(const KernelConfig& cfg) { return std::make_unique<Lstm>(cfg); }
std::unique_ptr<Kernel> make_lstm_grad(const KernelConfig& cfg) { return std::make_unique<LstmGrad>(cfg); }

}  // namespace of::kernels::cuda
