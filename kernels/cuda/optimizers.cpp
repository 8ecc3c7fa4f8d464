// SPDX-License-Identifier: Apache-2.0
// sgd_update, adam_update, rmsprop_update and adagrad_update, host side on the GPU: the CPU twin's layout (param, grad, state...,
// lr, step) -> (param', state'...) or (state'..., param') (rules.h) and attribute rules; the
// arithmetic is in optimizers.cu.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

float* output(void* const* out, int k) { return static_cast<float*>(out[size_t(k)]); }

class SgdUpdate final : public Kernel {
 public:
  SgdUpdate(const KernelConfig& cfg) : velocity_(cfg.inputs.size() != 4) {
    const char* name = "sgd_update";
    n_ = update_layout(cfg, name, velocity_ ? std::vector<const char*>{"velocity"} : std::vector<const char*>{});
    outputs_ = update_outputs(cfg);
    p_.momentum = float_attr_at_least(cfg, name, "momentum", 0.0f, 0.0f);
    if (!velocity_ && p_.momentum != 0.0f) fail(where_of(cfg), "sgd_update: momentum {} needs a velocity input", p_.momentum);
    const float dampening = cfg.attrs.get_float("dampening", 0.0f);
    p_.keep = 1.0f - dampening;
    p_.weight_decay = float_attr_at_least(cfg, name, "weight_decay", 0.0f, 0.0f);
    p_.nesterov = cfg.attrs.get_int("nesterov", 0) != 0;
    if (p_.nesterov && (p_.momentum <= 0.0f || dampening != 0.0f))
      fail(where_of(cfg), "sgd_update: nesterov needs momentum > 0 and dampening 0");
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const int lr = velocity_ ? 3 : 2;
    launch_sgd_update(p_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                      velocity_ ? static_cast<const float*>(in[2]) : nullptr, static_cast<const float*>(in[lr]),
                      static_cast<const float*>(in[lr + 1]), output(out, outputs_.param),
                      velocity_ ? output(out, outputs_.first_state) : nullptr, n_, ctx.stream->stream);
    ctx.stream->check_launch("sgd_update");
  }

 private:
  bool velocity_;
  int64_t n_ = 0;
  UpdateOutputs outputs_;
  SgdParams p_;
};

class AdamUpdate final : public Kernel {
 public:
  AdamUpdate(const KernelConfig& cfg) {
    const char* name = "adam_update";
    const int64_t amsgrad = cfg.attrs.get_int("amsgrad", 0);
    if (amsgrad != 0 && amsgrad != 1) fail(where_of(cfg), "{}: amsgrad must be 0 or 1, got {}", name, amsgrad);
    p_.amsgrad = amsgrad == 1;
    n_ = update_layout(cfg, name, adam_states(p_.amsgrad));
    outputs_ = update_outputs(cfg);
    p_.beta1 = float_attr_at_least(cfg, name, "beta1", 0.9f, 0.0f);
    p_.beta2 = float_attr_at_least(cfg, name, "beta2", 0.999f, 0.0f);
    p_.eps = float_attr_at_least(cfg, name, "eps", 1e-8f, 0.0f);
    p_.weight_decay = float_attr_at_least(cfg, name, "weight_decay", 0.0f, 0.0f);
    if (p_.beta1 >= 1.0f || p_.beta2 >= 1.0f)
      fail(where_of(cfg), "{}: beta1 {} and beta2 {} must be < 1", name, p_.beta1, p_.beta2);
    const int64_t decoupled = cfg.attrs.get_int("decoupled", 0);
    if (decoupled != 0 && decoupled != 1) fail(where_of(cfg), "{}: decoupled must be 0 or 1, got {}", name, decoupled);
    p_.decoupled = decoupled == 1;
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    auto f = [](const void* v) { return static_cast<const float*>(v); };
    const int lr = p_.amsgrad ? 5 : 4;
    launch_adam_update(p_, f(in[0]), f(in[1]), f(in[2]), f(in[3]), p_.amsgrad ? f(in[4]) : nullptr, f(in[lr]), f(in[lr + 1]),
                       output(out, outputs_.param), output(out, outputs_.first_state), output(out, outputs_.first_state + 1),
                       p_.amsgrad ? output(out, outputs_.first_state + 2) : nullptr, n_, ctx.stream->stream);
    ctx.stream->check_launch("adam_update");
  }

 private:
  int64_t n_ = 0;
  UpdateOutputs outputs_;
  AdamParams p_;
};

class RmspropUpdate final : public Kernel {
 public:
  RmspropUpdate(const KernelConfig& cfg) {
    const char* name = "rmsprop_update";
    p_.momentum = float_attr_at_least(cfg, name, "momentum", 0.0f, 0.0f);
    p_.centered = cfg.attrs.get_int("centered", 0) != 0;
    const std::vector<const char*> states = rmsprop_states(p_.momentum > 0, p_.centered);
    states_ = int(states.size());
    n_ = update_layout(cfg, name, states);
    outputs_ = update_outputs(cfg);
    p_.alpha = float_attr_at_least(cfg, name, "alpha", 0.99f, 0.0f);
    p_.eps = float_attr_at_least(cfg, name, "eps", 1e-8f, 0.0f);
    p_.weight_decay = float_attr_at_least(cfg, name, "weight_decay", 0.0f, 0.0f);
    if (p_.alpha > 1.0f) fail(where_of(cfg), "rmsprop_update: alpha {} must be <= 1", p_.alpha);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const bool momentum = p_.momentum > 0;
    const int ga = momentum ? 4 : 3, lr = 2 + states_;
    auto f = [](const void* v) { return static_cast<const float*>(v); };
    launch_rmsprop_update(p_, f(in[0]), f(in[1]), f(in[2]), momentum ? f(in[3]) : nullptr, p_.centered ? f(in[ga]) : nullptr, f(in[lr]),
                          f(in[lr + 1]), output(out, outputs_.param), output(out, outputs_.first_state),
                          momentum ? output(out, outputs_.first_state + 1) : nullptr,
                          p_.centered ? output(out, outputs_.first_state + (momentum ? 2 : 1)) : nullptr, n_, ctx.stream->stream);
    ctx.stream->check_launch("rmsprop_update");
  }

 private:
  int64_t n_ = 0;
  int states_ = 1;
  UpdateOutputs outputs_;
  RmspropParams p_;
};

class AdagradUpdate final : public Kernel {
 public:
  AdagradUpdate(const KernelConfig& cfg) {
    const char* name = "adagrad_update";
    n_ = update_layout(cfg, name, {"sum"});
    outputs_ = update_outputs(cfg);
    p_.lr_decay = float_attr_at_least(cfg, name, "lr_decay", 0.0f, 0.0f);
    p_.eps = float_attr_at_least(cfg, name, "eps", 1e-10f, 0.0f);
    p_.weight_decay = float_attr_at_least(cfg, name, "weight_decay", 0.0f, 0.0f);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    auto f = [](const void* v) { return static_cast<const float*>(v); };
    launch_adagrad_update(p_, f(in[0]), f(in[1]), f(in[2]), f(in[3]), f(in[4]), output(out, outputs_.param),
                          output(out, outputs_.first_state), n_, ctx.stream->stream);
    ctx.stream->check_launch("adagrad_update");
  }

 private:
  int64_t n_ = 0;
  UpdateOutputs outputs_;
  AdagradParams p_;
};

}  // namespace

std::unique_ptr<Kernel> make_adagrad_update(const KernelConfig& cfg) { return std::make_unique<AdagradUpdate>(cfg); }
std::unique_ptr<Kernel> make_rmsprop_update(const KernelConfig& cfg) { return std::make_unique<RmspropUpdate>(cfg); }
std::unique_ptr<Kernel> make_adam_update(const KernelConfig& cfg) { return std::make_unique<AdamUpdate>(cfg); }
std::unique_ptr<Kernel> make_sgd_update(const KernelConfig& cfg) { return std::make_unique<SgdUpdate>(cfg); }

}  // namespace of::kernels::cuda
