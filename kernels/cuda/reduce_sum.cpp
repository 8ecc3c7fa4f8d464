// SPDX-License-Identifier: Apache-2.0
// reduce_sum's host side on the GPU: the CPU twin's attribute rules (sorted `axes`, absent = all,
// `keepdims`, `divisor`), then the input as merged runs of kept and reduced dims for the launch.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

class ReduceSum final : public Kernel {
 public:
  ReduceSum(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "reduce_sum", 1, 1, 1);
    cpu::check_dtypes(cfg, "reduce_sum", DType::f32);
    const Shape& x = cfg.inputs[0].shape;
    const int64_t rank = static_cast<int64_t>(x.size());
    std::vector<int64_t> axes = cfg.attrs.get_ints("axes", {});
    if (!cfg.attrs.has("axes"))
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
        fail(where_of(cfg), "reduce_sum: axes must be sorted, distinct and in [0,{}) for X {}", rank, shape_str(x));
    const int64_t keepdims = cfg.attrs.get_int("keepdims", 1);
    if (keepdims != 0 && keepdims != 1) fail(where_of(cfg), "reduce_sum: keepdims must be 0 or 1, got {}", keepdims);
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t a : axes) reduced[size_t(a)] = true;
    Shape y;
    for (int64_t i = 0; i < rank; ++i)
      if (!reduced[size_t(i)])
        y.push_back(x[size_t(i)]);
      else if (keepdims)
        y.push_back(1);
    cpu::check_output_shape(cfg, "reduce_sum", 0, y);
    divisor_ = cfg.attrs.get_float("divisor", 1.0f);
    if (!(divisor_ > 0.0f)) fail(where_of(cfg), "reduce_sum: divisor must be positive, got {}", divisor_);

    // Merge runs of same-kind dims, dropping size-1 ones (they move no offset).
    space_.out_n = numel(y);
    space_.reduce_n = 1;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t d = x[size_t(i)];
      if (reduced[size_t(i)]) space_.reduce_n *= d;
      if (d == 1) continue;
      const bool r = reduced[size_t(i)];
      if (space_.rank > 0 && space_.reduced[space_.rank - 1] == r) {
        space_.dims[space_.rank - 1] *= d;
        continue;
      }
      if (space_.rank == kMaxReduceRuns)
        fail(where_of(cfg), "reduce_sum: X {} alternates reduced and kept axes more than {} times on cuda", shape_str(x),
             kMaxReduceRuns);
      space_.dims[space_.rank] = d;
      space_.reduced[space_.rank] = r;
      ++space_.rank;
    }
    if (numel(x) == 0) space_.reduce_n = 0;  // an empty input sums to zeros
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_reduce_sum(space_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), divisor_,
                      ctx.stream->stream);
    ctx.stream->check_launch("reduce_sum");
  }

 private:
  ReduceSpace space_;
  float divisor_ = 1.0f;
};

}  // namespace

std::unique_ptr<Kernel> make_reduce_sum(const KernelConfig& cfg) { return std::make_unique<ReduceSum>(cfg); }

}  // namespace of::kernels::cuda
