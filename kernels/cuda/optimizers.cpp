// SPDX-License-Identifier: Apache-2.0
// sgd_update and adam_update, host side on the GPU: the CPU twin's layout (param, grad, state...,
// lr, step) -> (param', state'... [, param' again]) and attribute rules; the arithmetic is in
// optimizers.cu.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

// The optional last output (rules.h, update_layout): param' copied there after the update.
// `tensors`: param, grad and the states; the copy is output tensors - 1 where there are that many.
int copy_output(const KernelConfig& cfg, int tensors) { return int(cfg.outputs.size()) == tensors ? tensors - 1 : -1; }
void emit_copy(const RunCtx& ctx, int copy_at, int64_t n, void* const* out) {
  if (copy_at < 0 || n == 0) return;
  const cudaError_t e = cudaMemcpyAsync(out[copy_at], out[0], size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream->stream);
  if (e != cudaSuccess) ctx.stream->note_failure("update: cudaMemcpyAsync", int(e));
}

class SgdUpdate final : public Kernel {
 public:
  SgdUpdate(const KernelConfig& cfg) : velocity_(cfg.inputs.size() != 4) {
    const char* name = "sgd_update";
    n_ = update_layout(cfg, name, velocity_ ? std::vector<const char*>{"velocity"} : std::vector<const char*>{});
    copy_at_ = copy_output(cfg, velocity_ ? 3 : 2);
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
                      static_cast<const float*>(in[lr + 1]), static_cast<float*>(out[0]),
                      velocity_ ? static_cast<float*>(out[1]) : nullptr, n_, ctx.stream->stream);
    ctx.stream->check_launch("sgd_update");
    emit_copy(ctx, copy_at_, n_, out);
  }

 private:
  bool velocity_;
  int64_t n_ = 0;
  int copy_at_ = -1;
  SgdParams p_;
};

class AdamUpdate final : public Kernel {
 public:
  AdamUpdate(const KernelConfig& cfg) {
    const char* name = "adam_update";
    n_ = update_layout(cfg, name, {"m", "v"});
    copy_at_ = copy_output(cfg, 4);
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
    launch_adam_update(p_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                       static_cast<const float*>(in[2]), static_cast<const float*>(in[3]),
                       static_cast<const float*>(in[4]), static_cast<const float*>(in[5]), static_cast<float*>(out[0]),
                       static_cast<float*>(out[1]), static_cast<float*>(out[2]), n_, ctx.stream->stream);
    ctx.stream->check_launch("adam_update");
    emit_copy(ctx, copy_at_, n_, out);
  }

 private:
  int64_t n_ = 0;
  int copy_at_ = -1;
  AdamParams p_;
};

}  // namespace

std::unique_ptr<Kernel> make_adam_update(const KernelConfig& cfg) { return std::make_unique<AdamUpdate>(cfg); }
std::unique_ptr<Kernel> make_sgd_update(const KernelConfig& cfg) { return std::make_unique<SgdUpdate>(cfg); }

}  // namespace of::kernels::cuda
