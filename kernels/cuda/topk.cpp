// SPDX-License-Identifier: Apache-2.0
// topk's and topk_grad's host side on the GPU: the CPU twins' rule (kernels/rules.h).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class TopK final : public Kernel {
 public:
  explicit TopK(const KernelConfig& cfg) : s_(topk_space(cfg, false)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_topk(s_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), static_cast<int64_t*>(out[1]), ctx.stream->stream);
    ctx.stream->check_launch("topk");
  }

 private:
  TopKSpace s_;
};

class TopKGrad final : public Kernel {
 public:
  explicit TopKGrad(const KernelConfig& cfg) : s_(topk_space(cfg, true)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_topk_grad(s_, static_cast<const float*>(in[0]), static_cast<const int64_t*>(in[1]), static_cast<float*>(out[0]),
                     ctx.stream->stream);
    ctx.stream->check_launch("topk_grad");
  }

 private:
  TopKSpace s_;
};

}  // namespace

std::unique_ptr<Kernel> make_topk(const KernelConfig& cfg) { return std::make_unique<TopK>(cfg); }
std::unique_ptr<Kernel> make_topk_grad(const KernelConfig& cfg) { return std::make_unique<TopKGrad>(cfg); }

}  // namespace of::kernels::cuda
