// SPDX-License-Identifier: Apache-2.0
// softmax, log_softmax and their gradients (from (dy, y)), host side on the GPU: the CPU twins'
// rules and [outer, n, inner] view (kernels/rules.h); the work is in softmax.cu.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Softmax final : public Kernel {
 public:
  Softmax(const KernelConfig& cfg, const char* name, bool log) : log_(log) {
    v_ = softmax_view(cfg, name);
    if (v_.outer > kMaxRows) fail(cpu::where_of(cfg), "{}: {} rows exceed a CUDA grid", name, v_.outer);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_softmax(log_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), v_.outer, v_.n, v_.inner,
                   ctx.stream->stream);
    ctx.stream->check_launch("softmax");
  }

 private:
  bool log_;
  cpu::AxisView v_;
};

class SoftmaxGrad final : public Kernel {
 public:
  SoftmaxGrad(const KernelConfig& cfg, const char* name, bool log) : log_(log) {
    v_ = softmax_grad_view(cfg, name);
    if (v_.outer > kMaxRows) fail(cpu::where_of(cfg), "{}: {} rows exceed a CUDA grid", name, v_.outer);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_softmax_grad(log_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                        static_cast<float*>(out[0]), v_.outer, v_.n, v_.inner, ctx.stream->stream);
    ctx.stream->check_launch("softmax_grad");
  }

 private:
  bool log_;
  cpu::AxisView v_;
};

class MaskedSoftmax final : public Kernel {
 public:
  MaskedSoftmax(const KernelConfig& cfg, bool grad) : grad_(grad) {
    v_ = masked_softmax_view(cfg, grad ? "masked_softmax_grad" : "masked_softmax", grad);
    if (v_.rows > kMaxRows) fail(cpu::where_of(cfg), "masked_softmax: {} rows exceed a CUDA grid", v_.rows);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (grad_) {
      launch_masked_softmax_grad(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<const uint8_t*>(in[2]),
                                 v_.masked, static_cast<float*>(out[0]), v_.rows, v_.n, v_.cond_rows, ctx.stream->stream);
      ctx.stream->check_launch("masked_softmax_grad");
    } else {
      launch_masked_softmax(static_cast<const float*>(in[0]), static_cast<const uint8_t*>(in[1]), v_.masked, static_cast<float*>(out[0]),
                            v_.rows, v_.n, v_.cond_rows, ctx.stream->stream);
      ctx.stream->check_launch("masked_softmax");
    }
  }

 private:
  bool grad_;
  MaskedSoftmaxView v_;
};

}  // namespace

std::unique_ptr<Kernel> make_masked_softmax(const KernelConfig& cfg) { return std::make_unique<MaskedSoftmax>(cfg, false); }
std::unique_ptr<Kernel> make_masked_softmax_grad(const KernelConfig& cfg) { return std::make_unique<MaskedSoftmax>(cfg, true); }

std::unique_ptr<Kernel> make_softmax(const KernelConfig& cfg) { return std::make_unique<Softmax>(cfg, "softmax", false); }
std::unique_ptr<Kernel> make_log_softmax(const KernelConfig& cfg) {
  return std::make_unique<Softmax>(cfg, "log_softmax", true);
}
std::unique_ptr<Kernel> make_softmax_grad(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxGrad>(cfg, "softmax_grad", false);
}
std::unique_ptr<Kernel> make_log_softmax_grad(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxGrad>(cfg, "log_softmax_grad", true);
}

}  // namespace of::kernels::cuda
