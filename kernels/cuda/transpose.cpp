// SPDX-License-Identifier: Apache-2.0
// transpose's host side on the GPU: the CPU twin's geometry (kernels/rules.h), any dtype.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Transpose final : public Kernel {
 public:
  Transpose(const KernelConfig& cfg) {
    const TransposeGeometry g = transpose_geometry(cfg);  // rank <= 8 = kMaxRank
    space_.rank = int(g.dims.size());
    for (size_t d = 0; d < g.dims.size(); ++d) {
      space_.dims[d] = g.dims[d];
      space_.in_strides[d] = g.in_strides[d];
    }
    space_.total = g.total;
    elem_size_ = g.elem_size;
    if (elem_size_ != 1 && elem_size_ != 2 && elem_size_ != 4 && elem_size_ != 8)
      fail(cpu::where_of(cfg), "transpose: elements of {} bytes", elem_size_);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_transpose(space_, elem_size_, in[0], out[0], ctx.stream->stream);
    ctx.stream->check_launch("transpose");
  }

 private:
  TransposeSpace space_;
  int64_t elem_size_ = 4;
};

}  // namespace

std::unique_ptr<Kernel> make_transpose(const KernelConfig& cfg) { return std::make_unique<Transpose>(cfg); }

}  // namespace of::kernels::cuda
