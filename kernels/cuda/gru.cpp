// SPDX-License-Identifier: Apache-2.0
// gru and gru_grad on the GPU: the CPU twins' algorithm (kernels/cpu/gru.cpp) with cuBLAS
// products and the cell math of kernels/recurrent_cells.h, one thread per element of each step.
// Config rules shared with the CPU twin (cpu::gru_config, cpu::gru_grad_config).
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/recurrent.h"

namespace of::kernels::cuda {

namespace {

size_t bytes(int64_t floats) { return size_t(floats) * sizeof(float); }

class Gru final : public Kernel {
 public:
  explicit Gru(const KernelConfig& cfg)
      : c_(cpu::gru_config(cfg)), xw_(bytes(c_.s.seq * c_.s.batch * c_.s.gh())), hr_(bytes(c_.s.batch * c_.s.gh())),
        zero_(bytes(c_.s.batch * c_.s.hidden)) {
    check_blas_sizes(cfg, c_.s);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& st = *ctx.stream;
    const cpu::RecurrentShape& s = c_.s;
    const cpu::RecurrentArgs args = cpu::recurrent_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *b = args.b, *h0 = args.h0;
    float *y = args.y, *yh = args.y_h;
    const int64_t S = s.seq, N = s.batch, H = s.hidden, GH = s.gh(), NH = N * H;
    auto* xw = static_cast<float*>(xw_.get());
    auto* hr = static_cast<float*>(hr_.get());
    auto* zero = static_cast<float*>(zero_.get());
    launch_fill(zero, 0.0f, NH, st.stream);
    for (int64_t d = 0; d < s.dirs; ++d) {
      project_inputs(st, s, d, x, w, b ? b + d * 2 * GH : nullptr, nullptr, xw);
      const float* rb = b ? b + d * 2 * GH + GH : nullptr;
      const float* h = h0 ? h0 + d * NH : zero;
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = s.time(d, step);
        project_hidden(st, s, d, h, r, rb, hr);
        float* ht = y + (t * s.dirs + d) * NH;
        float* gates = args.gates ? args.gates + (d * S + t) * N * GH : nullptr;
        float* qs = args.states ? args.states + (d * S + t) * NH : nullptr;
        launch_gru_step(xw + t * N * GH, hr, h, ht, gates, qs, N, H, st.stream);
        h = ht;
      }
      copy_floats(st, yh + d * NH, h, NH);
    }
    st.check_launch("gru");
  }

 private:
  cpu::RecurrentConfig c_;
  DeviceBuffer xw_, hr_, zero_;
};

class GruGrad final : public Kernel {
 public:
  explicit GruGrad(const KernelConfig& cfg)
      : c_(cpu::gru_grad_config(cfg)), dax_(bytes(c_.s.seq * c_.s.batch * c_.s.gh())), dah_(bytes(c_.s.seq * c_.s.batch * c_.s.gh())),
        hprev_(bytes(c_.s.seq * c_.s.batch * c_.s.hidden)), zero_(bytes(c_.s.batch * c_.s.hidden)) {
    check_blas_sizes(cfg, c_.s);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& st = *ctx.stream;
    const cpu::RecurrentShape& s = c_.s;
    const cpu::RecurrentGradArgs args = cpu::recurrent_grad_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *y = args.y, *gates = args.gates, *qs = args.states;
    const float *dy = args.dy, *dyh = args.dy_h, *h0 = args.h0;
    float *dx = args.dx, *dw = args.dw, *dr = args.dr, *db = args.db;
    float* dh = args.d_h0;  // dL/dH_t carried backwards; ends as d initial_h
    const int64_t S = s.seq, N = s.batch, H = s.hidden, GH = s.gh(), NH = N * H, D = s.dirs;
    auto* dax = static_cast<float*>(dax_.get());
    auto* dah = static_cast<float*>(dah_.get());
    auto* hprev = static_cast<float*>(hprev_.get());
    auto* zero = static_cast<float*>(zero_.get());
    launch_fill(zero, 0.0f, NH, st.stream);
    for (int64_t d = 0; d < D; ++d) {
      float* dhd = dh + d * NH;
      copy_floats(st, dhd, dyh ? dyh + d * NH : zero, NH);
      for (int64_t step = S; step-- > 0;) {
        const int64_t t = s.time(d, step);
        const int64_t tp = step > 0 ? s.time(d, step - 1) : -1;
        const float* hp = tp >= 0 ? y + (tp * D + d) * NH : h0 ? h0 + d * NH : zero;
        launch_gru_step_grad(gates + (d * S + t) * N * GH, qs + (d * S + t) * NH, hp, dy ? dy + (t * D + d) * NH : nullptr, dhd,
                             dax + t * N * GH, dah + t * N * GH, N, H, st.stream);
        copy_floats(st, hprev + t * NH, hp, NH);
        sgemm(st, false, false, N, H, GH, dah + t * N * GH, GH, r + d * GH * H, H, 1.0f, dhd, H);
      }
      weight_grads(st, s, d, dax, dah, x, hprev, w, dx, dw, dr, db);
    }
    st.check_launch("gru_grad");
  }

 private:
  cpu::RecurrentConfig c_;
  DeviceBuffer dax_, dah_, hprev_, zero_;
};

}  // namespace

std::unique_ptr<Kernel> make_gru(const KernelConfig& cfg) { return std::make_unique<Gru>(cfg); }
std::unique_ptr<Kernel> make_gru_grad(const KernelConfig& cfg) { return std::make_unique<GruGrad>(cfg); }

}  // namespace of::kernels::cuda
