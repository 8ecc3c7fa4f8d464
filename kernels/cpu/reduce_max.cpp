// SPDX-License-Identifier: Apache-2.0
// reduce_max and reduce_max_grad (kernels/reduce_max_space.h: the index math the CUDA twins
// share): per output element its maximum; the gradient dY at the first input equal to Y, zeros
// elsewhere; argmax (i64 out) the position of the maximum along its one reduced axis.
#include <algorithm>

#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class ReduceMax final : public Kernel {
 public:
  explicit ReduceMax(const KernelConfig& cfg) : s_(reduce_max_space(cfg, false)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    auto* y = static_cast<float*>(out[0]);
    for (int64_t o = 0; o < s_.out_n; ++o) y[o] = reduce_max_at(s_, x, o);
  }

 private:
  ReduceMaxSpace s_;
};

class ReduceMaxGrad final : public Kernel {
 public:
  explicit ReduceMaxGrad(const KernelConfig& cfg) : s_(reduce_max_space(cfg, true)), x_n_(numel(cfg.inputs[1].shape)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    const auto* y = static_cast<const float*>(in[2]);
    auto* dx = static_cast<float*>(out[0]);
    std::fill(dx, dx + x_n_, 0.0f);
    for (int64_t o = 0; o < s_.out_n; ++o) dx[reduce_argmax_at(s_, x, o, y[o])] = dy[o];
  }

 private:
  ReduceMaxSpace s_;
  int64_t x_n_;
};

class Argmax final : public Kernel {
 public:
  explicit Argmax(const KernelConfig& cfg) : s_(argmax_space(cfg)), last_(cfg.attrs.get_int("select_last_index", 0) != 0) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    auto* y = static_cast<int64_t*>(out[0]);
    for (int64_t o = 0; o < s_.out_n; ++o) y[o] = reduce_argmax_position(s_, x, o, last_);
  }

 private:
  ReduceMaxSpace s_;
  bool last_;
};

}  // namespace

std::unique_ptr<Kernel> make_argmax(const KernelConfig& cfg) { return std::make_unique<Argmax>(cfg); }
std::unique_ptr<Kernel> make_reduce_max(const KernelConfig& cfg) { return std::make_unique<ReduceMax>(cfg); }
std::unique_ptr<Kernel> make_reduce_max_grad(const KernelConfig& cfg) { return std::make_unique<ReduceMaxGrad>(cfg); }

}  // namespace of::kernels::cpu
