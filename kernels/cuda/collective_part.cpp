// SPDX-License-Identifier: Apache-2.0
// collective_part on the GPU: one device's part of a collective between the GPUs of one rank,
// reading the others' registers in place (peer access over NVLink or PCIe) — the boxes the CPU
// twin copies and adds (kernels/rules.h, collective_boxes), each one launch, in order.
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

class CollectivePart final : public Kernel {
 public:
  explicit CollectivePart(const KernelConfig& cfg) {
    const std::vector<CollectiveBox> boxes = collective_boxes(cfg);  // checks cfg first
    const Shape& y = cfg.outputs[0].shape;
    elem_ = dtype_size(cfg.outputs[0].dtype);
    if (elem_ != 4 && elem_ != 8) fail(where_of(cfg), "collective_part: {} elements are not moved on the GPU", dtype_name(cfg.outputs[0].dtype));
    if (y.size() > size_t(kMaxRank)) fail(where_of(cfg), "collective_part: output {} has more than {} axes", shape_str(y), kMaxRank);
    const std::vector<int64_t> y_st = strides_of(y);
    for (const CollectiveBox& b : boxes) {
      const std::vector<int64_t> x_st = strides_of(cfg.inputs[size_t(b.input)].shape);
      Launch l{.input = b.input, .add = b.add, .space = {}};
      l.space.rank = int(y.size());
      l.space.total = 1;
      for (size_t a = 0; a < y.size(); ++a) {
        l.space.dims[a] = b.size[a];
        l.space.src_strides[a] = x_st[a];
        l.space.dst_strides[a] = y_st[a];
        l.space.src += b.src[a] * x_st[a];
        l.space.dst += b.dst[a] * y_st[a];
        l.space.total *= b.size[a];
      }
      launches_.push_back(l);
    }
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    for (const Launch& l : launches_) launch_box(l.space, elem_, l.add, in[l.input], out[0], ctx.stream->stream);
    ctx.stream->check_launch("collective_part");
  }

 private:
  struct Launch {
    int32_t input;
    bool add;
    BoxSpace space;
  };
  int64_t elem_ = 4;
  std::vector<Launch> launches_;
};

}  // namespace

std::unique_ptr<Kernel> make_collective_part(const KernelConfig& cfg) { return std::make_unique<CollectivePart>(cfg); }

}  // namespace of::kernels::cuda
