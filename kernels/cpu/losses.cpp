// SPDX-License-Identifier: Apache-2.0
// Losses and their gradients: softmax_cross_entropy (logits [N,C], labels i64 [N], optional class
// weights [C] -> loss [], the mean or (attribute sum) the sum of the rows' losses; softmax prob
// [N,C] kept for the backward; with label smoothing E a row's loss is
// (1 - E) * -log p[label] + E * mean_k -log p[k], as torch's; with class weights a row weighs
// weight[label], in the sum and in the mean's divisor) and mse_loss (mean squared error). The data source
// validates labels; a row whose label is `ignore_index` (or, never from validated data, outside
// [0,C)) contributes 0 to the loss, is not counted in the mean's rows (all ignored: 0 / 0, NaN,
// as torch's) and gets a zero row of dlogits.
// Loss sums accumulate in double: one scalar per act, and it keeps a large-N mean exact to f32.
// Attribute `scale` (default 1): a device holding 1/k of a split batch divides by its counted
// rows / scale, k times them, so the k devices' losses (and gradients) sum to the mean of their
// means, as DDP's ranks' do. A sum takes no scale: the devices' sums add up to the whole batch's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/rules.h"
#include "kernels/cpu/row_reduce.h"
#include "kernels/cpu/vector_exp.h"

namespace of::kernels::cpu {

namespace {

bool is_scalar(const Shape& s) { return numel(s) == 1 && s.size() <= 1; }

bool counted_label(int64_t label, int64_t c, int64_t ignore) { return label != ignore && label >= 0 && label < c; }

// What a row weighs in the loss and its mean: 0 uncounted, else its label's class weight (1 without).
double row_weight(int64_t label, int64_t c, int64_t ignore, const float* weights) {
  return !counted_label(label, c, ignore) ? 0.0 : weights ? double(weights[label]) : 1.0;
}

// (logits, labels[, weights]) -> (loss [], prob [N,C]). prob may alias logits: a row's max and label logit
// are read before exp(x - max) is written over it in place (vector_exp.h).
class SoftmaxCrossEntropy final : public Kernel {
 public:
  SoftmaxCrossEntropy(const KernelConfig& cfg) {
    const char* name = "softmax_cross_entropy";
    check_arity(cfg, name, 2, 3, 2);
    check_dtypes(cfg, name, xent_input_dtypes(cfg, {DType::f32, DType::i64}), {DType::f32, DType::f32});
    std::tie(n_, c_) = xent_dims(cfg, name, 0);
    check_output_shape(cfg, name, 0, {});
    check_output_shape(cfg, name, 1, cfg.inputs[0].shape);
    scale_ = loss_scale(cfg);
    smoothing_ = label_smoothing(cfg, name);
    ignore_ = ignore_index(cfg);
    sum_ = loss_sums(cfg);
    weighted_ = class_weights(cfg, name, 2, c_, smoothing_);
    row_loss_.assign(size_t(std::max<int64_t>(n_, 0)), 0.0);
    row_weight_.assign(size_t(std::max<int64_t>(n_, 0)), 0.0);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    const int64_t* labels = static_cast<const int64_t*>(in[1]);
    float* loss = static_cast<float*>(out[0]);
    float* prob = static_cast<float*>(out[1]);
    const float* weights = weighted_ ? static_cast<const float*>(in[2]) : nullptr;
    const int64_t c = c_;
    // Rows are independent: split between the kernel threads (parallel_split.h); each row's term
    // waits in row_loss_ and the total adds them in row order, as one thread would.
    double* row_loss = row_loss_.data();
#pragma omp parallel for schedule(static) if (n_ > 1 && n_ * c >= kParallelElements)
    for (int64_t r = 0; r < n_; ++r) {
      if (c == 0) continue;
      const float* xr = x + r * c;
      float* pr = prob + r * c;
      const float m = row_max(xr, c);
      const int64_t label = labels[r];
      const bool counted = counted_label(label, c, ignore_);
      const float picked = counted ? xr[label] - m : 0.0f;  // read before prob overwrites x
      const float mean_x = smoothing_ > 0.0f ? row_sum(xr, c) / float(c) - m : 0.0f;
      exp_shifted(xr, m, pr, c);
      const float sum = row_sum(pr, c);
      // -log softmax[k] = log(sum) - (x[k] - m): log-sum-exp without overflow.
      const float lse = std::log(sum);
      double l = double(lse - picked);
      if (smoothing_ > 0.0f) l = (1.0 - double(smoothing_)) * l + double(smoothing_) * double(lse - mean_x);
      const double w = row_weight(label, c, ignore_, weights);
      row_loss[r] = counted ? (weights ? w * l : l) : 0.0;
      row_weight_[size_t(r)] = w;
      const float inv = 1.0f / sum;
      for (int64_t k = 0; k < c; ++k) pr[k] *= inv;
    }
    double total = 0.0, weight = 0.0;
    for (int64_t r = 0; r < n_ && c > 0; ++r)
      if (row_weight_[size_t(r)] != 0.0) total += row_loss[r], weight += row_weight_[size_t(r)];
    *loss = n_ <= 0 ? 0.0f : sum_ ? static_cast<float>(total) : static_cast<float>(total / (weight / double(scale_)));
  }

 private:
  int64_t n_ = 0, c_ = 0, ignore_ = 0;  // ignore_: the constructor reads it
  float scale_ = 1, smoothing_ = 0;
  bool sum_ = false, weighted_ = false;
  std::vector<double> row_loss_;    // per row: its term of the loss ...
  std::vector<double> row_weight_;  // ... and its weight in the mean (0: its label does not count)
};

// (dloss [], prob [N,C], labels [N][, weights [C]]) -> dlogits [N,C] = (prob - target) * dloss *
// row weight / the loss's divisor (the weights / scale for a mean, 1 for a sum), the target (1 - E) * onehot + E / C; zero rows
// where the label is not counted. dlogits may alias prob.
class SoftmaxCrossEntropyGrad final : public Kernel {
 public:
  SoftmaxCrossEntropyGrad(const KernelConfig& cfg) {
    const char* name = "softmax_cross_entropy_grad";
    check_arity(cfg, name, 3, 4, 1);
    check_dtypes(cfg, name, xent_input_dtypes(cfg, {DType::f32, DType::f32, DType::i64}), {DType::f32});
    if (!is_scalar(cfg.inputs[0].shape))
      fail(where_of(cfg), "{}: dloss {} must be a scalar", name, shape_str(cfg.inputs[0].shape));
    std::tie(n_, c_) = xent_dims(cfg, name, 1);
    check_output_shape(cfg, name, 0, cfg.inputs[1].shape);
    scale_ = loss_scale(cfg);
    smoothing_ = label_smoothing(cfg, name);
    ignore_ = ignore_index(cfg);
    sum_ = loss_sums(cfg);
    weighted_ = class_weights(cfg, name, 3, c_, smoothing_);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const int64_t* labels = static_cast<const int64_t*>(in[2]);
    const float* weights = weighted_ ? static_cast<const float*>(in[3]) : nullptr;
    double weight = 0.0;
    for (int64_t r = 0; r < n_; ++r) weight += row_weight(labels[r], c_, ignore_, weights);
    const double denom = sum_ ? 1.0 : (weight > 0.0 ? weight : 1.0) / double(scale_);
    const float scale = *static_cast<const float*>(in[0]) / static_cast<float>(denom);
    const float uniform = c_ > 0 ? smoothing_ / float(c_) * scale : 0.0f, on_label = (1.0f - smoothing_) * scale;
    const float* prob = static_cast<const float*>(in[1]);
    float* dx = static_cast<float*>(out[0]);
    const int64_t c = c_;
#pragma omp parallel for schedule(static) if (n_ > 1 && n_ * c >= kParallelElements)
    for (int64_t r = 0; r < n_; ++r) {
      const float* pr = prob + r * c;
      float* dxr = dx + r * c;
      const int64_t label = labels[r];
      if (!counted_label(label, c, ignore_)) {  // contributed a constant 0 to the loss
        std::fill(dxr, dxr + c, 0.0f);
        continue;
      }
      if (weights) {  // (no smoothing with weights: the constructor refuses it)
        const float s = scale * weights[label];
        for (int64_t k = 0; k < c; ++k) dxr[k] = pr[k] * s;
        dxr[label] -= s;
        continue;
      }
      for (int64_t k = 0; k < c; ++k) dxr[k] = pr[k] * scale - uniform;
      dxr[label] -= on_label;
    }
  }

 private:
  int64_t n_ = 0, c_ = 0, ignore_ = 0;  // ignore_: the constructor reads it
  float scale_ = 1, smoothing_ = 0;
  bool sum_ = false, weighted_ = false;
};

// (pred, target) -> loss [] = mean((pred - target)^2).
class MseLoss final : public Kernel {
 public:
  MseLoss(const KernelConfig& cfg) { std::tie(n_, denom_) = mse_loss_config(cfg, false); }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* p = static_cast<const float*>(in[0]);
    const float* t = static_cast<const float*>(in[1]);
    double sum = 0.0;
    for (int64_t i = 0; i < n_; ++i) {
      const double d = static_cast<double>(p[i]) - t[i];
      sum += d * d;
    }
    const double mean = n_ > 0 ? sum / denom_ : 0.0;
    *static_cast<float*>(out[0]) = static_cast<float>(mean);
  }

 private:
  int64_t n_ = 0;
  double denom_ = 1;
};

// (dloss [], pred, target) -> dpred = 2 * (pred - target) * dloss / numel. dpred may alias pred
// or target.
class MseLossGrad final : public Kernel {
 public:
  MseLossGrad(const KernelConfig& cfg) {
    double denom = 1;
    std::tie(n_, denom) = mse_loss_config(cfg, true);
    n_f_ = static_cast<float>(denom);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float scale = 2.0f * *static_cast<const float*>(in[0]) / n_f_;
    const float* p = static_cast<const float*>(in[1]);
    const float* t = static_cast<const float*>(in[2]);
    float* dp = static_cast<float*>(out[0]);
    for (int64_t i = 0; i < n_; ++i) dp[i] = (p[i] - t[i]) * scale;
  }

 private:
  int64_t n_ = 0;
  float n_f_ = 1;
};

// Evaluation: (logits [N,C], labels [N]) -> (nll [N], correct [N], counted [N]): each row's
// cross-entropy, 1 when its arg-max (the first, on ties, NaN above all, as torch.argmax) is its
// label, and 1 when its label counts (not ignore_index); 0, 0, 0 for a row that does not. Per
// row, so that the padded rows of a last partial batch can be left out of the totals.
class ClassifyMetrics final : public Kernel {
 public:
  ClassifyMetrics(const KernelConfig& cfg) {
    const char* name = "classify_metrics";
    check_arity(cfg, name, 2, 2, 3);
    check_dtypes(cfg, name, {DType::f32, DType::i64}, {DType::f32, DType::f32, DType::f32});
    std::tie(n_, c_) = xent_dims(cfg, name, 0);
    for (int k = 0; k < 3; ++k) check_output_shape(cfg, name, k, {n_});
    ignore_ = ignore_index(cfg);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    const int64_t* labels = static_cast<const int64_t*>(in[1]);
    float* nll = static_cast<float*>(out[0]);
    float* correct = static_cast<float*>(out[1]);
    float* counted = static_cast<float*>(out[2]);
    for (int64_t r = 0; r < n_; ++r, x += c_) {
      // torch.argmax: the first maximum, and a NaN is larger than everything, so that accuracy is
      // PyTorch's (logits.argmax(1) == label) also for a model that diverged.
      int64_t best = 0;
      for (int64_t k = 1; k < c_ && !std::isnan(x[best]); ++k)
        if (std::isnan(x[k]) || x[k] > x[best]) best = k;
      const float m = c_ > 0 ? x[best] : 0.0f;
      float sum = 0.0f;
      for (int64_t k = 0; k < c_; ++k) sum += std::exp(x[k] - m);
      const int64_t label = labels[r];
      const bool valid = counted_label(label, c_, ignore_);
      nll[r] = valid ? std::log(sum) - (x[label] - m) : 0.0f;
      correct[r] = valid && best == label ? 1.0f : 0.0f;
      counted[r] = valid ? 1.0f : 0.0f;
    }
  }

 private:
  int64_t n_ = 0, c_ = 0, ignore_ = 0;  // ignore_: the constructor reads it
};

}  // namespace

std::unique_ptr<Kernel> make_classify_metrics(const KernelConfig& cfg) {
  return std::make_unique<ClassifyMetrics>(cfg);
}
std::unique_ptr<Kernel> make_mse_loss(const KernelConfig& cfg) {
  return std::make_unique<MseLoss>(cfg);
}
std::unique_ptr<Kernel> make_mse_loss_grad(const KernelConfig& cfg) {
  return std::make_unique<MseLossGrad>(cfg);
}
std::unique_ptr<Kernel> make_softmax_cross_entropy(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxCrossEntropy>(cfg);
}
std::unique_ptr<Kernel> make_softmax_cross_entropy_grad(const KernelConfig& cfg) {
  return std::make_unique<SoftmaxCrossEntropyGrad>(cfg);
}

}  // namespace of::kernels::cpu
