// SPDX-License-Identifier: Apache-2.0
// reduce_sum over sorted, non-negative `axes` (absent: all axes, as in ONNX; an empty list: none)
// with `keepdims` 0/1, for bias gradients and for undoing broadcasts; `divisor` (default 1) then
// divides every sum (ReduceMean: divided, not multiplied by 1/n, as PyTorch's mean rounds). Adjacent axes of the same
// kind (reduced or kept) are merged at prepare time, so a bias gradient [N,C] -> [C] is one
// contiguous accumulate per row. The output must not alias the input.
#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

class ReduceSum final : public Kernel {
 public:
  ReduceSum(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  // Merged dims, outermost first, with the output stride of each (0 where reduced).
  std::vector<int64_t> dims_, out_strides_;
  std::vector<int64_t> index_;  // odometer over the outer dims (a member: run() allocates nothing)
  int64_t in_n_ = 0, out_n_ = 0;
  float divisor_ = 1.0f;
};

ReduceSum::ReduceSum(const KernelConfig& cfg) {
  check_arity(cfg, "reduce_sum", 1, 1, 1);
  check_dtypes(cfg, "reduce_sum", DType::f32);
  const Shape& x = cfg.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = cfg.attrs.get_ints("axes", {});
  if (!cfg.attrs.has("axes"))
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1]))
      fail(where_of(cfg), "reduce_sum: axes must be sorted, distinct and in [0,{}) for X {}",
           rank, shape_str(x));
  const int64_t keepdims = cfg.attrs.get_int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1)
    fail(where_of(cfg), "reduce_sum: keepdims must be 0 or 1, got {}", keepdims);
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  Shape y;
  for (int64_t i = 0; i < rank; ++i)
    if (!reduced[i])
      y.push_back(x[i]);
    else if (keepdims)
      y.push_back(1);
  check_output_shape(cfg, "reduce_sum", 0, y);
  in_n_ = numel(x);
  out_n_ = numel(y);
  divisor_ = cfg.attrs.get_float("divisor", 1.0f);
  if (!(divisor_ > 0.0f)) fail(where_of(cfg), "reduce_sum: divisor must be positive, got {}", divisor_);

  // Merge runs of same-kind axes, dropping size-1 ones (they change neither offset).
  std::vector<bool> kinds;
  for (int64_t i = 0; i < rank; ++i) {
    if (x[i] == 1) continue;
    if (!kinds.empty() && kinds.back() == reduced[i]) {
      dims_.back() *= x[i];
    } else {
      dims_.push_back(x[i]);
      kinds.push_back(reduced[i]);
    }
  }
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
    if (inner_reduced) {
      float s = 0.0f;
      for (int64_t j = 0; j < inner; ++j) s += x[j];
      y[y_off] += s;
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
}

}  // namespace

std::unique_ptr<Kernel> make_reduce_sum(const KernelConfig& cfg) {
  return std::make_unique<ReduceSum>(cfg);
}

}  // namespace of::kernels::cpu
