// SPDX-License-Identifier: Apache-2.0
// Optimizer updates, exactly torch.optim.SGD, Adam/AdamW, RMSprop and Adagrad's rules as their
// single-tensor paths compute them (maximize=False; Adagrad's accumulator starts at 0). lr and the
// 1-based step count are f32 scalar INPUTS, so a schedule can change them every step without
// re-preparing the kernel. The state outputs may alias their inputs (out[k] == the matching in[]):
// every element is read before it is written. Micro-batches are summed before the update, by the
// accumulate kernel: an update steps once.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// The shared layout: inputs (param, grad, state..., lr, step) and outputs (param', state'...) or
// (state'..., param') (rules.h). Checks shapes and attributes; run() then splits the pointers.
class UpdateLayout {
 public:
  UpdateLayout(const KernelConfig& cfg, const char* name, std::vector<const char*> state_names)
      : tensors_(int(state_names.size()) + 2), n_(update_layout(cfg, name, state_names)), outputs_(update_outputs(cfg)) {}

  int64_t n() const { return n_; }
  float* param_out(void* const* out) const { return static_cast<float*>(out[size_t(outputs_.param)]); }
  float* state_out(void* const* out, int k) const { return static_cast<float*>(out[size_t(outputs_.first_state + k)]); }
  float lr(const void* const* in) const { return scalar(in, 0); }
  float step(const void* const* in) const { return scalar(in, 1); }

 private:
  float scalar(const void* const* in, int k) const { return *static_cast<const float*>(in[size_t(tensors_ + k)]); }
  int tensors_ = 0;
  int64_t n_ = 0;
  UpdateOutputs outputs_;
};

float float_attr(const KernelConfig& cfg, const char* name, const char* attr, float fallback, float lo) {
  return float_attr_at_least(cfg, name, attr, fallback, lo);
}

// Calls run(begin, count) over [0, n): from kParallelElements each kernel thread takes one
// contiguous run. The loops themselves stay in plain functions: inside an OpenMP region GCC
// reads the captured scalars through pointers and no longer vectorizes them (measured: the SGD
// update of a 1024x1024 weight 0.31 -> 0.78 ms on one thread).
template <class Run>
void split_runs(int64_t n, Run run) {
  const int threads = split_threads(n, n);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto [lo, hi] = thread_share(n);
    if (hi > lo) run(lo, hi - lo);
  }
}

// One element-wise pass with the branches decided outside the loop, so that it vectorizes. The
// outputs may be the inputs themselves (in place): each element is read before it is written and
// no element depends on another, which is what `omp simd` asserts, and what lets the kernel
// threads take contiguous runs of a large tensor each (the same bits on any thread count).
template <bool Momentum, bool Nesterov>
void sgd_loop(int64_t n, const float* p, const float* grad, const float* buf, float* p_out, float* buf_out, float mu,
              float keep, float wd, float lr, bool first) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i];
    float g = grad[i] + wd * pi;
    if constexpr (Momentum) {
      const float b = first ? g : mu * buf[i] + keep * g;
      buf_out[i] = b;
      g = Nesterov ? g + mu * b : b;
    }
    p_out[i] = pi - lr * g;
  }
}

template <bool Momentum, bool Nesterov>
void sgd_split(int64_t n, const float* p, const float* grad, const float* buf, float* p_out, float* buf_out, float mu,
               float keep, float wd, float lr, bool first) {
  split_runs(n, [&](int64_t at, int64_t count) {
    sgd_loop<Momentum, Nesterov>(count, p + at, grad + at, Momentum ? buf + at : buf, p_out + at, Momentum ? buf_out + at : buf_out,
                                 mu, keep, wd, lr, first);
  });
}

// Adam's pass (AdamUpdate::run gives the scalars), as sgd_loop. Amsgrad: the denominator takes
// the largest v so far (vmax, torch's max_exp_avg_sq), kept beside v.
template <bool Amsgrad>
void adam_loop(int64_t n, const float* p, const float* grad, const float* m, const float* v, const float* vmax, float* p_out,
               float* m_out, float* v_out, float* vmax_out, float b1, float b2, float eps, float l2, float shrink, float step_size,
               float inv_bc2_sqrt) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i] * shrink;
    const float g = grad[i] + l2 * p[i];
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m_out[i] = mi;
    v_out[i] = vi;
    float denom_v = vi;
    if constexpr (Amsgrad) {
      denom_v = std::max(vmax[i], vi);
      vmax_out[i] = denom_v;
    }
    p_out[i] = pi - step_size * mi / (std::sqrt(denom_v) * inv_bc2_sqrt + eps);
  }
}

// (param, grad, velocity, lr, step) -> (param', velocity'). With g = grad + wd*param:
// step 1 (step < 1.5): buf = g; later: buf = momentum*buf + (1-dampening)*g; then
// param' = param - lr * (nesterov ? g + momentum*buf : buf). momentum 0: param' = param - lr*g;
// PyTorch keeps no buffer then, and neither do plans: (param, grad, lr, step) -> (param'). A
// velocity given with momentum 0 is passed through unchanged (plans of earlier versions).
class SgdUpdate final : public Kernel {
 public:
  SgdUpdate(const KernelConfig& cfg)
      : velocity_(cfg.inputs.size() != 4), layout_(cfg, "sgd_update", velocity_ ? std::vector<const char*>{"velocity"} : std::vector<const char*>{}) {
    momentum_ = float_attr(cfg, "sgd_update", "momentum", 0.0f, 0.0f);
    if (!velocity_ && momentum_ != 0.0f) fail(where_of(cfg), "sgd_update: momentum {} needs a velocity input", momentum_);
    dampening_ = cfg.attrs.get_float("dampening", 0.0f);
    weight_decay_ = float_attr(cfg, "sgd_update", "weight_decay", 0.0f, 0.0f);
    nesterov_ = cfg.attrs.get_int("nesterov", 0) != 0;
    if (nesterov_ && (momentum_ <= 0.0f || dampening_ != 0.0f))  // torch raises the same
      fail(where_of(cfg), "sgd_update: nesterov needs momentum > 0 and dampening 0");
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const int64_t n = layout_.n();
    const float* p = static_cast<const float*>(in[0]);
    const float* grad = static_cast<const float*>(in[1]);
    const float* buf = velocity_ ? static_cast<const float*>(in[2]) : nullptr;
    const float lr = layout_.lr(in);
    const bool first = layout_.step(in) < 1.5f;  // step counts from 1
    float* p_out = layout_.param_out(out);
    float* buf_out = velocity_ ? layout_.state_out(out, 0) : nullptr;
    const float mu = momentum_, wd = weight_decay_, keep = 1.0f - dampening_;
    if (mu == 0.0f) {
      if (buf_out != buf) std::memcpy(buf_out, buf, size_t(n) * sizeof(float));
      sgd_split<false, false>(n, p, grad, buf, p_out, buf_out, 0.0f, 1.0f, wd, lr, first);
    } else if (nesterov_) {
      sgd_split<true, true>(n, p, grad, buf, p_out, buf_out, mu, keep, wd, lr, first);
    } else {
      sgd_split<true, false>(n, p, grad, buf, p_out, buf_out, mu, keep, wd, lr, first);
    }
  }

 private:
  bool velocity_;  // declared before layout_, which its value shapes
  UpdateLayout layout_;
  float momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

// (param, grad, m, v[, vmax], lr, step) -> (param', m', v'[, vmax']). decoupled 0 (Adam):
// g = grad + wd*param; decoupled 1 (AdamW): param *= 1 - lr*wd first. Then m = b1*m + (1-b1)*g,
// v = b2*v + (1-b2)*g^2, param -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps), as torch's
// single-tensor path computes it; amsgrad 1: vmax = max(vmax, v) stands for v in the last step.
// A step below 1 is treated as 1 (bias corrections stay > 0).
class AdamUpdate final : public Kernel {
 public:
  AdamUpdate(const KernelConfig& cfg)
      : amsgrad_(cfg.attrs.get_int("amsgrad", 0) == 1),
        layout_(cfg, "adam_update", adam_states(amsgrad_)) {
    const char* name = "adam_update";
    beta1_ = float_attr(cfg, name, "beta1", 0.9f, 0.0f);
    beta2_ = float_attr(cfg, name, "beta2", 0.999f, 0.0f);
    eps_ = float_attr(cfg, name, "eps", 1e-8f, 0.0f);
    weight_decay_ = float_attr(cfg, name, "weight_decay", 0.0f, 0.0f);
    if (beta1_ >= 1.0f || beta2_ >= 1.0f)
      fail(where_of(cfg), "{}: beta1 {} and beta2 {} must be < 1", name, beta1_, beta2_);
    const int64_t decoupled = cfg.attrs.get_int("decoupled", 0);
    if (decoupled != 0 && decoupled != 1)
      fail(where_of(cfg), "{}: decoupled must be 0 or 1, got {}", name, decoupled);
    decoupled_ = decoupled == 1;
    const int64_t amsgrad = cfg.attrs.get_int("amsgrad", 0);
    if (amsgrad != 0 && amsgrad != 1) fail(where_of(cfg), "{}: amsgrad must be 0 or 1, got {}", name, amsgrad);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const int64_t n = layout_.n();
    const float* p = static_cast<const float*>(in[0]);
    const float* grad = static_cast<const float*>(in[1]);
    const float* m = static_cast<const float*>(in[2]);
    const float* v = static_cast<const float*>(in[3]);
    const float* vmax = amsgrad_ ? static_cast<const float*>(in[4]) : nullptr;
    float* vmax_out = amsgrad_ ? layout_.state_out(out, 2) : nullptr;
    const float lr = layout_.lr(in);
    const double t = std::max(1.0f, layout_.step(in));
    float* p_out = layout_.param_out(out);
    float* m_out = layout_.state_out(out, 0);
    float* v_out = layout_.state_out(out, 1);
    // Per-act scalars in double: b^t for large t loses nothing to f32 pow.
    const float step_size = static_cast<float>(lr / (1.0 - std::pow(double(beta1_), t)));
    const float inv_bc2_sqrt =
        static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(double(beta2_), t)));
    const float b1 = beta1_, b2 = beta2_, eps = eps_;
    const float l2 = decoupled_ ? 0.0f : weight_decay_;
    const float shrink = decoupled_ ? 1.0f - lr * weight_decay_ : 1.0f;
    split_runs(n, [&](int64_t at, int64_t count) {
      if (amsgrad_)
        adam_loop<true>(count, p + at, grad + at, m + at, v + at, vmax + at, p_out + at, m_out + at, v_out + at, vmax_out + at, b1, b2,
                        eps, l2, shrink, step_size, inv_bc2_sqrt);
      else
        adam_loop<false>(count, p + at, grad + at, m + at, v + at, nullptr, p_out + at, m_out + at, v_out + at, nullptr, b1, b2, eps,
                         l2, shrink, step_size, inv_bc2_sqrt);
    });
  }

 private:
  bool amsgrad_;  // before layout_, which it shapes
  UpdateLayout layout_;
  float beta1_ = 0.9f, beta2_ = 0.999f, eps_ = 1e-8f, weight_decay_ = 0.0f;
  bool decoupled_ = false;
};

// RMSprop's pass, as sgd_loop. With g = grad + wd*param: sq = alpha*sq + (1-alpha)*g^2; centered:
// ga = alpha*ga + (1-alpha)*g, avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps; momentum:
// buf = mu*buf + g/avg, param -= lr*buf, else param -= lr*(g/avg).
template <bool Momentum, bool Centered>
void rmsprop_loop(int64_t n, const float* p, const float* grad, const float* sq, const float* buf, const float* ga, float* p_out,
                  float* sq_out, float* buf_out, float* ga_out, float alpha, float eps, float wd, float mu, float lr) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i];
    const float g = grad[i] + wd * pi;
    const float s = alpha * sq[i] + (1.0f - alpha) * (g * g);
    sq_out[i] = s;
    float avg;
    if constexpr (Centered) {
      const float a = alpha * ga[i] + (1.0f - alpha) * g;
      ga_out[i] = a;
      avg = std::sqrt(s - a * a) + eps;
    } else {
      avg = std::sqrt(s) + eps;
    }
    if constexpr (Momentum) {
      const float b = mu * buf[i] + g / avg;
      buf_out[i] = b;
      p_out[i] = pi - lr * b;
    } else {
      p_out[i] = pi - lr * (g / avg);
    }
  }
}

// (param, grad, square_avg[, momentum_buffer][, grad_avg], lr, step) -> (param', the states'),
// the states torch keeps: a momentum buffer when momentum > 0, grad_avg when centered.
class RmspropUpdate final : public Kernel {
 public:
  RmspropUpdate(const KernelConfig& cfg)
      : momentum_(float_attr(cfg, "rmsprop_update", "momentum", 0.0f, 0.0f)),
        centered_(cfg.attrs.get_int("centered", 0) != 0),
        layout_(cfg, "rmsprop_update", rmsprop_states(momentum_ > 0, centered_)) {
    alpha_ = float_attr(cfg, "rmsprop_update", "alpha", 0.99f, 0.0f);
    eps_ = float_attr(cfg, "rmsprop_update", "eps", 1e-8f, 0.0f);
    weight_decay_ = float_attr(cfg, "rmsprop_update", "weight_decay", 0.0f, 0.0f);
    if (alpha_ > 1.0f) fail(where_of(cfg), "rmsprop_update: alpha {} must be <= 1", alpha_);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* p = static_cast<const float*>(in[0]);
    const float* grad = static_cast<const float*>(in[1]);
    const float* sq = static_cast<const float*>(in[2]);
    const bool momentum = momentum_ > 0;
    const float* buf = momentum ? static_cast<const float*>(in[3]) : nullptr;
    const float* ga = centered_ ? static_cast<const float*>(in[momentum ? 4 : 3]) : nullptr;
    float* p_out = layout_.param_out(out);
    float* sq_out = layout_.state_out(out, 0);
    float* buf_out = momentum ? layout_.state_out(out, 1) : nullptr;
    float* ga_out = centered_ ? layout_.state_out(out, momentum ? 2 : 1) : nullptr;
    const float lr = layout_.lr(in), alpha = alpha_, eps = eps_, wd = weight_decay_, mu = momentum_;
    split_runs(layout_.n(), [&](int64_t at, int64_t count) {
      auto run = [&]<bool M, bool C>() {
        rmsprop_loop<M, C>(count, p + at, grad + at, sq + at, M ? buf + at : nullptr, C ? ga + at : nullptr, p_out + at, sq_out + at,
                           M ? buf_out + at : nullptr, C ? ga_out + at : nullptr, alpha, eps, wd, mu, lr);
      };
      if (momentum && centered_) run.template operator()<true, true>();
      else if (momentum) run.template operator()<true, false>();
      else if (centered_) run.template operator()<false, true>();
      else run.template operator()<false, false>();
    });
  }

 private:
  float momentum_;  // momentum_ and centered_ before layout_, which they shape
  bool centered_;
  UpdateLayout layout_;
  float alpha_ = 0.99f, eps_ = 1e-8f, weight_decay_ = 0.0f;
};

// Adagrad's pass: g = grad + wd*param, sum += g^2, param -= clr * (g / (sqrt(sum) + eps)).
void adagrad_loop(int64_t n, const float* p, const float* grad, const float* sum, float* p_out, float* sum_out, float eps, float wd,
                  float clr) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float pi = p[i];
    const float g = grad[i] + wd * pi;
    const float s = sum[i] + g * g;
    sum_out[i] = s;
    p_out[i] = pi - clr * (g / (std::sqrt(s) + eps));
  }
}

// (param, grad, sum, lr, step) -> (param', sum'), the rate clr = lr / (1 + (step - 1) * lr_decay).
class AdagradUpdate final : public Kernel {
 public:
  AdagradUpdate(const KernelConfig& cfg) : layout_(cfg, "adagrad_update", {"sum"}) {
    lr_decay_ = float_attr(cfg, "adagrad_update", "lr_decay", 0.0f, 0.0f);
    eps_ = float_attr(cfg, "adagrad_update", "eps", 1e-10f, 0.0f);
    weight_decay_ = float_attr(cfg, "adagrad_update", "weight_decay", 0.0f, 0.0f);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* p = static_cast<const float*>(in[0]);
    const float* grad = static_cast<const float*>(in[1]);
    const float* sum = static_cast<const float*>(in[2]);
    float* p_out = layout_.param_out(out);
    float* sum_out = layout_.state_out(out, 0);
    const double step = std::max(1.0f, layout_.step(in));
    const float clr = float(double(layout_.lr(in)) / (1.0 + (step - 1.0) * double(lr_decay_)));  // torch: Python floats
    const float eps = eps_, wd = weight_decay_;
    split_runs(layout_.n(), [&](int64_t at, int64_t count) {
      adagrad_loop(count, p + at, grad + at, sum + at, p_out + at, sum_out + at, eps, wd, clr);
    });
  }

 private:
  UpdateLayout layout_;
  float lr_decay_ = 0.0f, eps_ = 1e-10f, weight_decay_ = 0.0f;
};

}  // namespace

std::unique_ptr<Kernel> make_rmsprop_update(const KernelConfig& cfg) {
  return std::make_unique<RmspropUpdate>(cfg);
}
std::unique_ptr<Kernel> make_adagrad_update(const KernelConfig& cfg) {
  return std::make_unique<AdagradUpdate>(cfg);
}
std::unique_ptr<Kernel> make_adam_update(const KernelConfig& cfg) {
  return std::make_unique<AdamUpdate>(cfg);
}
std::unique_ptr<Kernel> make_sgd_update(const KernelConfig& cfg) {
  return std::make_unique<SgdUpdate>(cfg);
}

}  // namespace of::kernels::cpu
