// SPDX-License-Identifier: Apache-2.0
// softmax, log_softmax and their gradients (from (dy, y)), host side on the GPU: the CPU twins'
// checks and [outer, n, inner] view (cpu::axis_view); the work is in softmax.cu.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

class Softmax final : public Kernel {
 public:
  Softmax(const KernelConfig& cfg, const char* name, bool log) : log_(log) {
    cpu::check_arity(cfg, name, 1, 1, 1);
    cpu::check_dtypes(cfg, name, DType::f32);
    cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
    v_ = cpu::axis_view(cfg, name, cfg.inputs[0].shape);
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
    cpu::check_arity(cfg, name, 2, 2, 1);
    cpu::check_dtypes(cfg, name, DType::f32);
    const Shape& s = cfg.inputs[0].shape;
    cpu::check_input_shape(cfg, name, 1, "y", s);
    cpu::check_output_shape(cfg, name, 0, s);
    v_ = cpu::axis_view(cfg, name, s);
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
