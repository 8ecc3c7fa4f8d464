// SPDX-License-Identifier: Apache-2.0
// transpose's and expand's host side on the GPU: the CPU twins' rules (kernels/rules.h), any dtype.
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

// expand: y (dense) from x read at its own strides, 0 along the axes it is broadcast over: the
// transpose launch, any dtype.
class Expand final : public Kernel {
 public:
  Expand(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "expand", 1, 1, 1);
    const Shape& x = cfg.inputs[0].shape;
    const Shape& y = cfg.outputs[0].shape;
    if (cfg.outputs[0].dtype != cfg.inputs[0].dtype)
      fail(cpu::where_of(cfg), "expand: output dtype {} differs from the input's {}", dtype_name(cfg.outputs[0].dtype),
           dtype_name(cfg.inputs[0].dtype));
    if (y.size() > size_t(kMaxRank)) fail(cpu::where_of(cfg), "expand: rank {} exceeds {}", y.size(), kMaxRank);
    if (!broadcasts_to(x, y)) fail(cpu::where_of(cfg), "expand: input {} does not broadcast to output {}", shape_str(x), shape_str(y));
    const size_t off = y.size() - x.size();
    std::vector<int64_t> st = strides_of(x);
    space_.rank = int(y.size());
    space_.total = numel(y);
    for (size_t d = 0; d < y.size(); ++d) {
      space_.dims[d] = y[d];
      space_.in_strides[d] = d < off || x[d - off] == 1 ? 0 : st[d - off];
    }
    elem_size_ = dtype_size(cfg.inputs[0].dtype);
    if (elem_size_ != 1 && elem_size_ != 2 && elem_size_ != 4 && elem_size_ != 8)
      fail(cpu::where_of(cfg), "expand: elements of {} bytes", elem_size_);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_transpose(space_, elem_size_, in[0], out[0], ctx.stream->stream);
    ctx.stream->check_launch("expand");
  }

 private:
  TransposeSpace space_;
  int64_t elem_size_ = 4;
};

}  // namespace

std::unique_ptr<Kernel> make_transpose(const KernelConfig& cfg) { return std::make_unique<Transpose>(cfg); }
std::unique_ptr<Kernel> make_expand(const KernelConfig& cfg) { return std::make_unique<Expand>(cfg); }

}  // namespace of::kernels::cuda
