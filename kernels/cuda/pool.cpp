// SPDX-License-Identifier: Apache-2.0
// max_pool, average_pool, global_average_pool and their gradients, host side on the GPU: the CPU twins' window rules
// (kernels/cpu/pool_window.h: kernel_shape, strides, pads, dilations, the pooled shape); the
// gradient keeps each window's argmax in a scratch buffer of its own, allocated when prepared.
#include <algorithm>
#include <tuple>

#include "kernels/cpu/check.h"
#include "kernels/cpu/pool_window.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

PoolGeometry geometry_of(const Shape& x, const cpu::Axis& rows, const cpu::Axis& cols) {
  PoolGeometry p;
  p.planes = x[0] * x[1];
  p.h = rows.in, p.w = cols.in, p.oh = rows.out, p.ow = cols.out, p.kh = rows.kernel, p.kw = cols.kernel;
  p.stride_h = rows.stride, p.stride_w = cols.stride, p.pad_t = rows.pad_begin, p.pad_l = cols.pad_begin;
  p.dil_h = rows.dilation, p.dil_w = cols.dilation;
  p.pad_b = rows.pad_end, p.pad_r = cols.pad_end;
  return p;
}

class MaxPool final : public Kernel {
 public:
  MaxPool(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "max_pool", 1, 1, 1);
    cpu::check_dtypes(cfg, "max_pool", DType::f32);
    const Shape& x = cfg.inputs[0].shape;
    const auto [rows, cols] = cpu::pool_axes(cfg, "max_pool", x, cfg.outputs[0].shape, "output 0", true);
    p_ = geometry_of(x, rows, cols);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_max_pool(p_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("max_pool");
  }

 private:
  PoolGeometry p_;
};

// (dy, x) -> dx; x is the forward input, to find each window's argmax again.
class MaxPoolGrad final : public Kernel {
 public:
  MaxPoolGrad(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "max_pool_grad", 2, 2, 1);
    cpu::check_dtypes(cfg, "max_pool_grad", DType::f32);
    const Shape& x = cfg.outputs[0].shape;
    cpu::check_input_shape(cfg, "max_pool_grad", 1, "x", x);
    const auto [rows, cols] = cpu::pool_axes(cfg, "max_pool_grad", x, cfg.inputs[0].shape, "input 0 (dy)", true);
    p_ = geometry_of(x, rows, cols);
    argmax_ = std::make_unique<DeviceBuffer>(size_t(std::max<int64_t>(p_.planes * p_.oh * p_.ow, 1)) * sizeof(int64_t));
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_max_pool_grad(p_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                         static_cast<int64_t*>(argmax_->get()), static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("max_pool_grad");
  }

 private:
  PoolGeometry p_;
  std::unique_ptr<DeviceBuffer> argmax_;
};

class AveragePool final : public Kernel {
 public:
  AveragePool(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "average_pool", 1, 1, 1);
    cpu::check_dtypes(cfg, "average_pool", DType::f32);
    const Shape& x = cfg.inputs[0].shape;
    const auto [rows, cols] = cpu::pool_axes(cfg, "average_pool", x, cfg.outputs[0].shape, "output 0", false);
    p_ = geometry_of(x, rows, cols);
    include_pad_ = cfg.attrs.get_int("count_include_pad", 0) != 0;
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_average_pool(p_, include_pad_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("average_pool");
  }

 private:
  PoolGeometry p_;
  bool include_pad_ = false;
};

class AveragePoolGrad final : public Kernel {
 public:
  AveragePoolGrad(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "average_pool_grad", 1, 1, 1);
    cpu::check_dtypes(cfg, "average_pool_grad", DType::f32);
    const Shape& x = cfg.outputs[0].shape;
    const auto [rows, cols] = cpu::pool_axes(cfg, "average_pool_grad", x, cfg.inputs[0].shape, "input 0 (dy)", false);
    p_ = geometry_of(x, rows, cols);
    include_pad_ = cfg.attrs.get_int("count_include_pad", 0) != 0;
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_average_pool_grad(p_, include_pad_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("average_pool_grad");
  }

 private:
  PoolGeometry p_;
  bool include_pad_ = false;
};

class GlobalAveragePool final : public Kernel {
 public:
  explicit GlobalAveragePool(const KernelConfig& cfg) { std::tie(planes_, spatial_) = global_average_pool_config(cfg, false); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_global_average_pool(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), planes_, spatial_, ctx.stream->stream);
    ctx.stream->check_launch("global_average_pool");
  }

 private:
  int64_t planes_ = 0, spatial_ = 0;
};

class GlobalAveragePoolGrad final : public Kernel {
 public:
  explicit GlobalAveragePoolGrad(const KernelConfig& cfg) { std::tie(planes_, spatial_) = global_average_pool_config(cfg, true); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_global_average_pool_grad(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), planes_, spatial_, ctx.stream->stream);
    ctx.stream->check_launch("global_average_pool_grad");
  }

 private:
  int64_t planes_ = 0, spatial_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool(const KernelConfig& cfg) { return std::make_unique<MaxPool>(cfg); }
std::unique_ptr<Kernel> make_max_pool_grad(const KernelConfig& cfg) { return std::make_unique<MaxPoolGrad>(cfg); }
std::unique_ptr<Kernel> make_average_pool(const KernelConfig& cfg) { return std::make_unique<AveragePool>(cfg); }
std::unique_ptr<Kernel> make_average_pool_grad(const KernelConfig& cfg) { return std::make_unique<AveragePoolGrad>(cfg); }
std::unique_ptr<Kernel> make_global_average_pool(const KernelConfig& cfg) { return std::make_unique<GlobalAveragePool>(cfg); }
std::unique_ptr<Kernel> make_global_average_pool_grad(const KernelConfig& cfg) { return std::make_unique<GlobalAveragePoolGrad>(cfg); }

}  // namespace of::kernels::cuda
