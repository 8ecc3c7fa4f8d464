// SPDX-License-Identifier: Apache-2.0
// reduce_max's, reduce_max_grad's and argmax's host side on the GPU: the CPU twins' rule (kernels/rules.h).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class ReduceMax final : public Kernel {
 public:
  explicit ReduceMax(const KernelConfig& cfg) : s_(reduce_max_space(cfg, false)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_reduce_max(s_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("reduce_max");
  }

 private:
  ReduceMaxSpace s_;
};

class ReduceMaxGrad final : public Kernel {
 public:
  explicit ReduceMaxGrad(const KernelConfig& cfg) : s_(reduce_max_space(cfg, true)), x_n_(numel(cfg.inputs[1].shape)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_reduce_max_grad(s_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]), static_cast<const float*>(in[2]),
                           static_cast<float*>(out[0]), x_n_, ctx.stream->stream);
    ctx.stream->check_launch("reduce_max_grad");
  }

 private:
  ReduceMaxSpace s_;
  int64_t x_n_;
};

class Argmax final : public Kernel {
 public:
  explicit Argmax(const KernelConfig& cfg) : s_(argmax_space(cfg)), last_(cfg.attrs.get_int("select_last_index", 0) != 0) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_argmax(s_, static_cast<const float*>(in[0]), static_cast<int64_t*>(out[0]), last_, ctx.stream->stream);
    ctx.stream->check_launch("argmax");
  }

 private:
  ReduceMaxSpace s_;
  bool last_;
};

}  // namespace

std::unique_ptr<Kernel> make_argmax(const KernelConfig& cfg) { return std::make_unique<Argmax>(cfg); }
std::unique_ptr<Kernel> make_reduce_max(const KernelConfig& cfg) { return std::make_unique<ReduceMax>(cfg); }
std::unique_ptr<Kernel> make_reduce_max_grad(const KernelConfig& cfg) { return std::make_unique<ReduceMaxGrad>(cfg); }

}  // namespace of::kernels::cuda
