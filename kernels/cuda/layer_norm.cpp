// SPDX-License-Identifier: Apache-2.0
// layer_norm, layer_norm_grad and layer_norm_scale_grad, host side on the GPU: the CPU twins'
// rules (kernels/rules.h); the scale's gradient keeps each row's moments in a scratch buffer of
// its own, allocated when it is prepared.
#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

LayerNormRows checked(const KernelConfig& cfg, LayerNormRows r) {
  if (r.rows > kMaxRows) fail(cpu::where_of(cfg), "layer norm: {} rows exceed a CUDA grid", r.rows);
  return r;
}

class LayerNorm final : public Kernel {
 public:
  LayerNorm(const KernelConfig& cfg) : r_(checked(cfg, layer_norm_rows(cfg))) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_layer_norm(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                      r_.bias ? static_cast<const float*>(in[2]) : nullptr, static_cast<float*>(out[0]), r_.rows, r_.n,
                      r_.eps, ctx.stream->stream);
    ctx.stream->check_launch("layer_norm");
  }

 private:
  LayerNormRows r_;
};

class LayerNormGrad final : public Kernel {
 public:
  LayerNormGrad(const KernelConfig& cfg) : r_(checked(cfg, layer_norm_grad_rows(cfg))) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_layer_norm_grad(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                           static_cast<const float*>(in[2]), static_cast<float*>(out[0]), r_.rows, r_.n, r_.eps,
                           ctx.stream->stream);
    ctx.stream->check_launch("layer_norm_grad");
  }

 private:
  LayerNormRows r_;
};

class LayerNormScaleGrad final : public Kernel {
 public:
  LayerNormScaleGrad(const KernelConfig& cfg)
      : r_(checked(cfg, layer_norm_scale_grad_rows(cfg))), moments_(size_t(std::max<int64_t>(r_.rows, 1)) * 2 * sizeof(float)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_layer_norm_scale_grad(static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                                 static_cast<float*>(moments_.get()), static_cast<float*>(out[0]), r_.rows, r_.n,
                                 r_.eps, ctx.stream->stream);
    ctx.stream->check_launch("layer_norm_scale_grad");
  }

 private:
  LayerNormRows r_;
  DeviceBuffer moments_;
};

// Instance normalization: the CPU twins' rule (kernels/rules.h), one launch each.
class InstanceNorm final : public Kernel {
 public:
  InstanceNorm(const KernelConfig& cfg, const char* name) : r_(instance_norm_rows(cfg, name)), name_(name) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const float*>(in[1]);
    auto* y = static_cast<float*>(out[0]);
    const std::string_view name = name_;
    if (name == "instance_norm")
      launch_instance_norm(a, b, static_cast<const float*>(in[2]), y, r_.rows, r_.n, r_.channels, r_.eps, ctx.stream->stream);
    else if (name == "instance_norm_grad")
      launch_instance_norm_grad(a, b, static_cast<const float*>(in[2]), y, r_.rows, r_.n, r_.channels, r_.eps, ctx.stream->stream);
    else
      launch_instance_norm_scale_grad(a, b, y, r_.rows, r_.n, r_.channels, r_.eps, ctx.stream->stream);
    ctx.stream->check_launch(name_);
  }

 private:
  InstanceNormRows r_;
  const char* name_;
};

}  // namespace

std::unique_ptr<Kernel> make_layer_norm(const KernelConfig& cfg) { return std::make_unique<LayerNorm>(cfg); }
std::unique_ptr<Kernel> make_layer_norm_grad(const KernelConfig& cfg) { return std::make_unique<LayerNormGrad>(cfg); }
std::unique_ptr<Kernel> make_layer_norm_scale_grad(const KernelConfig& cfg) {
  return std::make_unique<LayerNormScaleGrad>(cfg);
}

std::unique_ptr<Kernel> make_instance_norm(const KernelConfig& cfg) { return std::make_unique<InstanceNorm>(cfg, "instance_norm"); }
std::unique_ptr<Kernel> make_instance_norm_grad(const KernelConfig& cfg) { return std::make_unique<InstanceNorm>(cfg, "instance_norm_grad"); }
std::unique_ptr<Kernel> make_instance_norm_scale_grad(const KernelConfig& cfg) {
  return std::make_unique<InstanceNorm>(cfg, "instance_norm_scale_grad");
}

}  // namespace of::kernels::cuda
