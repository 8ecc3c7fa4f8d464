// SPDX-License-Identifier: Apache-2.0
// gather_elements' and scatter_elements' host side on the GPU: the CPU twins' rules (kernels/rules.h).
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class GatherElements final : public Kernel {
 public:
  explicit GatherElements(const KernelConfig& cfg) : s_(gather_elements_space(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_gather_elements(s_, static_cast<const float*>(in[0]), in[1], static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("gather_elements");
  }

 private:
  ElementsSpace s_;
};

class ScatterElements final : public Kernel {
 public:
  explicit ScatterElements(const KernelConfig& cfg) : s_(scatter_elements_space(cfg, mode_)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const size_t bytes = size_t(s_.data_count) * sizeof(float);
    const auto [base, indices, updates] = scatter_inputs(mode_, in);
    cudaError_t e = cudaSuccess;
    if (!base) e = cudaMemsetAsync(out[0], 0, bytes, ctx.stream->stream);
    else if (out[0] != base) e = cudaMemcpyAsync(out[0], base, bytes, cudaMemcpyDeviceToDevice, ctx.stream->stream);
    if (e != cudaSuccess) ctx.stream->note_failure("scatter_elements: base copy", int(e));
    launch_scatter_elements(s_, mode_, indices, updates, static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("scatter_elements");
  }

 private:
  ScatterMode mode_ = ScatterMode::set;
  ElementsSpace s_;
};

}  // namespace

std::unique_ptr<Kernel> make_gather_elements(const KernelConfig& cfg) { return std::make_unique<GatherElements>(cfg); }
std::unique_ptr<Kernel> make_scatter_elements(const KernelConfig& cfg) { return std::make_unique<ScatterElements>(cfg); }

}  // namespace of::kernels::cuda
