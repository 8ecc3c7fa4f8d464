// SPDX-License-Identifier: Apache-2.0
// rnn and rnn_grad on the GPU: the CPU twins' algorithm (kernels/cpu/rnn.cpp) with cuBLAS
// products and the cell math of kernels/recurrent_cells.h, one thread per element of each step.
// Config rules shared with the CPU twin (cpu::rnn_config, cpu::rnn_grad_config).
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/recurrent.h"

namespace of::kernels::cuda {

namespace {

size_t bytes(int64_t floats) { return size_t(floats) * sizeof(float); }

class Rnn final : public Kernel {
 public:
  explicit Rnn(const KernelConfig& cfg)
      : c_(cpu::rnn_config(cfg)), xw_(bytes(c_.s.seq * c_.s.batch * c_.s.hidden)), hr_(bytes(c_.s.batch * c_.s.hidden)),
        zero_(bytes(c_.s.batch * c_.s.hidden)) {
    check_blas_sizes(cfg, c_.s);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& st = *ctx.stream;
    const cpu::RecurrentShape& s = c_.s;
    const cpu::RecurrentArgs args = cpu::recurrent_args(c_, in, out);
    const float *x = args.x, *w = args.w, *r = args.r, *b = args.b, *h0 = args.h0;
    const int64_t S = s.seq, N = s.batch, H = s.hidden, NH = N * H;
    auto* xw = static_cast<float*>(xw_.get());
    auto* hr = static_cast<float*>(hr_.get());
    auto* zero = static_cast<float*>(zero_.get());
    launch_fill(zero, 0.0f, NH, st.stream);
    for (int64_t d = 0; d < s.dirs; ++d) {
      project_inputs(st, s, d, x, w, b ? b + d * 2 * H : nullptr, nullptr, xw);
      const float* rb = b ? b + d * 2 * H + H : nullptr;
      const float* h = h0 ? h0 + d * NH : zero;
      for (int64_t step = 0; step < S; ++step) {
        const int64_t t = s.time(d, step);
        project_hidden(st, s, d, h, r, rb, hr);
        float* ht = args.y + (t * s.dirs + d) * NH;
        launch_rnn_step(xw + t * NH, hr, ht, N, H, c_.relu, st.stream);
        h = ht;
      }
      copy_floats(st, args.y_h + d * NH, h, NH);
    }
    st.check_launch("rnn");
  }

 private:
  cpu::RecurrentConfig c_;
  DeviceBuffer xw_, hr_, zero_;
};

class RnnGrad final : public Kernel {
 public:
  explicit RnnGrad(const KernelConfig& cfg)
      : c_(cpu::rnn_grad_config(cfg)), da_(bytes(c_.s.seq * c_.s.batch * c_.s.hidden)), hprev_(bytes(c_.s.seq * c_.s.batch * c_.s.hidden)),
        zero_(bytes(c_.s.batch * c_.s.hidden)) {
    check_blas_sizes(cfg, c_.s);
  }

  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& st = *ctx.stream;
    const cpu::RecurrentShape& s = c_.s;
    const cpu::RecurrentGradArgs args = cpu::recurrent_grad_args(c_, in, out);
    const float *y = args.y, *dy = args.dy, *dyh = args.dy_h, *h0 = args.h0;
    float* dh = args.d_h0;  // dL/dH_t carried backwards; ends as d initial_h
    const int64_t S = s.seq, N = s.batch, H = s.hidden, NH = N * H, D = s.dirs;
    auto* da = static_cast<float*>(da_.get());
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
        launch_rnn_step_grad(y + (t * D + d) * NH, dy ? dy + (t * D + d) * NH : nullptr, dhd, da + t * NH, N, H, c_.relu, st.stream);
        copy_floats(st, hprev + t * NH, hp, NH);
        sgemm(st, false, false, N, H, H, da + t * NH, H, args.r + d * H * H, H, 0.0f, dhd, H);
      }
      weight_grads(st, s, d, da, da, args.x, hprev, args.w, args.dx, args.dw, args.dr, args.db);
    }
    st.check_launch("rnn_grad");
  }

 private:
  cpu::RecurrentConfig c_;
  DeviceBuffer da_, hprev_, zero_;
};

}  // namespace

std::unique_ptr<Kernel> make_rnn(const KernelConfig& cfg) { return std::make_unique<Rnn>(cfg); }
std::unique_ptr<Kernel> make_rnn_grad(const KernelConfig& cfg) { return std::make_unique<RnnGrad>(cfg); }

}  // namespace of::kernels::cuda
