// SPDX-License-Identifier: Apache-2.0
// reduce_sum over sorted, non-negative `axes` (absent: all axes, as in ONNX; an empty list: none)
// with `keepdims` 0/1, for bias gradients and for undoing broadcasts; `divisor` (default 1) then
// divides every sum (ReduceMean: divided, not multiplied by 1/n, as PyTorch's mean rounds). Adjacent axes of the same
// kind (reduced or kept) are merged at prepare time, so a bias gradient [N,C] -> [C] is one
// contiguous accumulate per row. The output must not alias the input.
// reduce_l2 (ReduceL2: torch.norm, F.normalize) is the same walk over squares, then the square
// root of each sum (no divisor).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/row_reduce.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class ReduceSum final : public Kernel {
 public:
  ReduceSum(const KernelConfig& cfg, bool l2);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  // Merged dims, outermost first, with the output stride of each (0 where reduced).
  std::vector<int64_t> dims_, out_strides_;
  std::vector<int64_t> index_;  // odometer over the outer dims (a member: run() allocates nothing)
  int64_t in_n_ = 0, out_n_ = 0;
  float divisor_ = 1.0f;
  bool l2_ = false;
};

ReduceSum::ReduceSum(const KernelConfig& cfg, bool l2) : l2_(l2) {
  const ReduceGeometry g = reduce_geometry(cfg);
  if (l2 && g.divisor != 1.0f) fail(where_of(cfg), "reduce_l2: takes no divisor");
  in_n_ = g.in_n;
  out_n_ = g.out_n;
  divisor_ = g.divisor;
  dims_ = g.dims;
  const std::vector<bool>& kinds = g.reduced;
  out_strides_.assign(dims_.size(), 0);
  int64_t stride = 1;
  for (size_t i = dims_.size(); i-- > 0;)
    if (!kinds[i]) {
      out_strides_[i] = stride;
      stride *= dims_[i];
    }
  if (dims_.empty()) {  // every axis has size 1: a copy
    dims_.push_back(1);
    out_strides_.push_back(1);
  }
  index_.assign(dims_.size(), 0);
}

void ReduceSum::run(const RunCtx&, const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  float* y = static_cast<float*>(out[0]);
  std::fill(y, y + out_n_, 0.0f);
  if (in_n_ == 0) return;
  const size_t last = dims_.size() - 1;
  const int64_t inner = dims_[last];
  const bool inner_reduced = out_strides_[last] == 0;
  std::fill(index_.begin(), index_.end(), 0);
  int64_t y_off = 0;
  for (int64_t done = 0; done < in_n_; done += inner, x += inner) {
    if (l2_) {
      float* dst = y + y_off;
      if (inner_reduced) {
        float sum = 0.0f;
        for (int64_t j = 0; j < inner; ++j) sum += x[j] * x[j];
        *dst += sum;
      } else {
        for (int64_t j = 0; j < inner; ++j) dst[j] += x[j] * x[j];
      }
    } else if (inner_reduced) {
      y[y_off] += row_sum(x, inner);
    } else {
      float* dst = y + y_off;
      for (int64_t j = 0; j < inner; ++j) dst[j] += x[j];
    }
    // Advance the odometer over the outer dims, keeping y_off in step.
    for (size_t d = last; d-- > 0;) {
      y_off += out_strides_[d];
      if (++index_[d] < dims_[d]) break;
      y_off -= out_strides_[d] * dims_[d];
      index_[d] = 0;
    }
  }
  if (divisor_ != 1.0f)
    for (int64_t i = 0; i < out_n_; ++i) y[i] /= divisor_;
  if (l2_)
    for (int64_t i = 0; i < out_n_; ++i) y[i] = std::sqrt(y[i]);
}

}  // namespace

std::unique_ptr<Kernel> make_reduce_sum(const KernelConfig& cfg) {
  return std::make_unique<ReduceSum>(cfg, false);
}
std::unique_ptr<Kernel> make_reduce_l2(const KernelConfig& cfg) {
  return std::make_unique<ReduceSum>(cfg, true);
}

}  // namespace of::kernels::cpu
