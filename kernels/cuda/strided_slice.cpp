// SPDX-License-Identifier: Apache-2.0
// strided_slice and its gradient on the GPU: the CPU twins' geometry (kernels/rules.h); the
// forward pass is the transpose launch from X + offset, the gradient a scatter into a zeroed dX.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

TransposeSpace space_of(const StridedSliceGeometry& g) {
  TransposeSpace s;
  s.rank = int(g.dims.size());
  for (size_t d = 0; d < g.dims.size(); ++d) {
    s.dims[d] = g.dims[d];
    s.in_strides[d] = g.in_strides[d];
  }
  s.total = g.total;
  return s;
}

class StridedSlice final : public Kernel {
 public:
  explicit StridedSlice(const KernelConfig& cfg) : g_(strided_slice_geometry(cfg, false)), space_(space_of(g_)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const uint8_t*>(in[0]) + g_.offset * g_.elem_size;
    launch_transpose(space_, g_.elem_size, x, out[0], ctx.stream->stream);
    ctx.stream->check_launch("strided_slice");
  }

 private:
  StridedSliceGeometry g_;
  TransposeSpace space_;
};

class StridedSliceGrad final : public Kernel {
 public:
  explicit StridedSliceGrad(const KernelConfig& cfg)
      : g_(strided_slice_geometry(cfg, true)), space_(space_of(g_)), dx_elements_(numel(cfg.outputs[0].shape)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_strided_scatter(space_, g_.offset, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), dx_elements_,
                           ctx.stream->stream);
    ctx.stream->check_launch("strided_slice_grad");
  }

 private:
  StridedSliceGeometry g_;
  TransposeSpace space_;
  int64_t dx_elements_;
};

}  // namespace

std::unique_ptr<Kernel> make_strided_slice(const KernelConfig& cfg) { return std::make_unique<StridedSlice>(cfg); }
std::unique_ptr<Kernel> make_strided_slice_grad(const KernelConfig& cfg) { return std::make_unique<StridedSliceGrad>(cfg); }

}  // namespace of::kernels::cuda
