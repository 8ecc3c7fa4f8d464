// SPDX-License-Identifier: Apache-2.0
// reduce_sum's host side on the GPU: the CPU twin's attribute rules (sorted `axes`, absent = all,
// `keepdims`, `divisor`), then the input as merged runs of kept and reduced dims for the launch;
// reduce_l2 the same.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class ReduceSum final : public Kernel {
 public:
  ReduceSum(const KernelConfig& cfg, bool l2) : l2_(l2) {
    const ReduceGeometry g = reduce_geometry(cfg);
    if (l2 && g.divisor != 1.0f) fail(cpu::where_of(cfg), "reduce_l2: takes no divisor");
    if (g.dims.size() > size_t(kMaxReduceRuns))
      fail(cpu::where_of(cfg), "reduce_sum: X {} alternates reduced and kept axes more than {} times on cuda",
           shape_str(cfg.inputs[0].shape), kMaxReduceRuns);
    space_.rank = int(g.dims.size());
    space_.out_n = g.out_n;
    space_.reduce_n = g.out_n > 0 ? g.in_n / g.out_n : 0;  // an empty input sums to zeros
    for (size_t d = 0; d < g.dims.size(); ++d) {
      space_.dims[d] = g.dims[d];
      space_.reduced[d] = g.reduced[d];
    }
    divisor_ = g.divisor;
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_reduce_sum(space_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), divisor_, l2_,
                      ctx.stream->stream);
    ctx.stream->check_launch(l2_ ? "reduce_l2" : "reduce_sum");
  }

 private:
  ReduceSpace space_;
  float divisor_ = 1.0f;
  bool l2_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_reduce_sum(const KernelConfig& cfg) { return std::make_unique<ReduceSum>(cfg, false); }
std::unique_ptr<Kernel> make_reduce_l2(const KernelConfig& cfg) { return std::make_unique<ReduceSum>(cfg, true); }

}  // namespace of::kernels::cuda
