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

}  // namespace

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
