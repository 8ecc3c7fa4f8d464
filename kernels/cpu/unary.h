// SPDX-License-Identifier: Apache-2.0
// The element-wise kernels of one tensor, shared by activations.cpp, activation_grads.cpp and
// pointwise.cpp: y = op(x), and dx = op(dy, t) where t is the forward input or output (the
// `second` input's name in errors). Included by those three files only (templates stay out of
// widely included headers).
#pragma once

#include <memory>

#include "kernels/cpu/check.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

template <class Op>
class Unary final : public Kernel {
 public:
  Unary(const KernelConfig& cfg, const char* name, Op op) : op_(op), n_(unary_count(cfg, name)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const Op op = op_;  // a local copy: stores through y cannot change it, so the loop vectorizes
    const int64_t n = n_;
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
  }

 private:
  Op op_;
  int64_t n_ = 0;
};

template <class Op>
class UnaryGrad final : public Kernel {
 public:
  UnaryGrad(const KernelConfig& cfg, const char* name, Op op, const char* second)
      : op_(op), n_(unary_grad_count(cfg, name, second)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    const float* t = static_cast<const float*>(in[1]);
    float* dx = static_cast<float*>(out[0]);
    const Op op = op_;
    const int64_t n = n_;
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
    for (int64_t i = 0; i < n; ++i) dx[i] = op(dy[i], t[i]);
  }

 private:
  Op op_;
  int64_t n_ = 0;
};

template <class Op>
std::unique_ptr<Kernel> unary(const KernelConfig& cfg, const char* name, Op op = Op{}) {
  return std::make_unique<Unary<Op>>(cfg, name, op);
}
// `second`: "x" when the gradient reads the forward input, "y" when it reads the output.
template <class Op>
std::unique_ptr<Kernel> unary_grad(const KernelConfig& cfg, const char* name, Op op = Op{}, const char* second = "x") {
  return std::make_unique<UnaryGrad<Op>>(cfg, name, op, second);
}

}  // namespace of::kernels::cpu
