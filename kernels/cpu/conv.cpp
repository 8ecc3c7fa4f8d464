// SPDX-License-Identifier: Apache-2.0
// conv (ONNX Conv, 2-D, NCHW): im2col into a workspace sized at prepare time, then one
// dnnl_sgemm per (batch, group): Y_g[M/g, OH*OW] = W_g[M/g, C/g*kH*kW] * col[C/g*kH*kW, OH*OW].
// A 1x1, stride-1, unpadded conv skips im2col: the input plane already is the column matrix.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

// Outputs o in [lo, hi) read input index o*stride + offset inside [0, len).
struct Range {
  int64_t lo = 0, hi = 0;
};

Range valid_outputs(int64_t len, int64_t stride, int64_t offset, int64_t out_len) {
  Range r{out_len, out_len};
  for (int64_t o = 0; o < out_len; ++o) {
    const int64_t i = o * stride + offset;
    if (i >= 0 && i < len) {
      if (r.lo == out_len) r.lo = o;
      r.hi = o + 1;
    }
  }
  if (r.lo == out_len) r.lo = r.hi = 0;
  return r;
}

class Conv final : public Kernel {
 public:
  Conv(const KernelConfig& cfg);
  void run(const void* const* in, void* const* out) override;

 private:
  void im2col(const float* x, float* col) const;

  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, m_ = 0, kh_ = 0, kw_ = 0, oh_ = 0, ow_ = 0;
  int64_t group_ = 1, cg_ = 0, mg_ = 0;
  int64_t stride_h_ = 1, stride_w_ = 1, pad_t_ = 0, pad_l_ = 0, dil_h_ = 1, dil_w_ = 1;
  bool has_bias_ = false, direct_ = false, relu_ = false;
  std::vector<Range> rows_, cols_;  // per kernel row kh / column kw: outputs inside the input
  std::vector<float> col_;          // im2col workspace for one (batch, group)
};

Conv::Conv(const KernelConfig& cfg) {
  check_arity(cfg, "conv", 2, 3, 1);
  check_dtypes(cfg, "conv", DType::f32);
  const Shape& x = cfg.inputs[0].shape;
  const Shape& wt = cfg.inputs[1].shape;
  if (x.size() != 4 || wt.size() != 4)
    fail(where_of(cfg), "conv: only 2-D convolution is supported: X {}, W {}", shape_str(x),
         shape_str(wt));
  n_ = x[0], c_ = x[1], h_ = x[2], w_ = x[3];
  m_ = wt[0], kh_ = wt[2], kw_ = wt[3];
  if (c_ < 1 || kh_ < 1 || kw_ < 1)
    fail(where_of(cfg), "conv: empty channels or kernel: X {}, W {}", shape_str(x), shape_str(wt));
  relu_ = fused_relu(cfg, "conv");
  group_ = cfg.attrs.get_int("group", 1);
  if (group_ < 1 || c_ % group_ != 0 || m_ % group_ != 0 || wt[1] != c_ / group_)
    fail(where_of(cfg), "conv: X {} and W {} do not fit group={}", shape_str(x), shape_str(wt),
         group_);
  cg_ = c_ / group_;
  mg_ = m_ / group_;
  const auto ks = get_ints_n(cfg, "conv", "kernel_shape", 2, {kh_, kw_});
  if (ks[0] != kh_ || ks[1] != kw_)
    fail(where_of(cfg), "conv: kernel_shape [{},{}] differs from W {}", ks[0], ks[1],
         shape_str(wt));
  const auto st = get_ints_n(cfg, "conv", "strides", 2, {1, 1});
  const auto pads = get_ints_n(cfg, "conv", "pads", 4, {0, 0, 0, 0});
  const auto dil = get_ints_n(cfg, "conv", "dilations", 2, {1, 1});
  if (st[0] < 1 || st[1] < 1 || dil[0] < 1 || dil[1] < 1 ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; }))
    fail(where_of(cfg), "conv: strides and dilations must be >= 1, pads >= 0");
  stride_h_ = st[0], stride_w_ = st[1], dil_h_ = dil[0], dil_w_ = dil[1];
  pad_t_ = pads[0], pad_l_ = pads[1];
  oh_ = (h_ + pads[0] + pads[2] - dil_h_ * (kh_ - 1) - 1) / stride_h_ + 1;
  ow_ = (w_ + pads[1] + pads[3] - dil_w_ * (kw_ - 1) - 1) / stride_w_ + 1;
  if (oh_ < 1 || ow_ < 1)
    fail(where_of(cfg), "conv: kernel {} is larger than padded input {}", shape_str(wt),
         shape_str(x));
  check_output_shape(cfg, "conv", 0, {n_, m_, oh_, ow_});
  if (cfg.inputs.size() == 3) {
    if (cfg.inputs[2].shape != Shape{m_})
      fail(where_of(cfg), "conv: bias {} must be [{}]", shape_str(cfg.inputs[2].shape), m_);
    has_bias_ = true;
  }

  direct_ = kh_ == 1 && kw_ == 1 && stride_h_ == 1 && stride_w_ == 1 &&
            std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  if (direct_) return;
  for (int64_t k = 0; k < kh_; ++k)
    rows_.push_back(valid_outputs(h_, stride_h_, k * dil_h_ - pad_t_, oh_));
  for (int64_t k = 0; k < kw_; ++k)
    cols_.push_back(valid_outputs(w_, stride_w_, k * dil_w_ - pad_l_, ow_));
  col_.resize(cg_ * kh_ * kw_ * oh_ * ow_);
}

void Conv::im2col(const float* x, float* col) const {
  for (int64_t c = 0; c < cg_; ++c) {
    const float* plane = x + c * h_ * w_;
    for (int64_t ki = 0; ki < kh_; ++ki) {
      const Range rr = rows_[ki];
      for (int64_t kj = 0; kj < kw_; ++kj, col += oh_ * ow_) {
        const Range cr = cols_[kj];
        const int64_t off_w = kj * dil_w_ - pad_l_;
        std::fill(col, col + rr.lo * ow_, 0.0f);
        for (int64_t o = rr.lo; o < rr.hi; ++o) {
          const float* src = plane + (o * stride_h_ + ki * dil_h_ - pad_t_) * w_ + off_w;
          float* dst = col + o * ow_;
          std::fill(dst, dst + cr.lo, 0.0f);
          if (stride_w_ == 1) {
            std::memcpy(dst + cr.lo, src + cr.lo, (cr.hi - cr.lo) * sizeof(float));
          } else {
            for (int64_t p = cr.lo; p < cr.hi; ++p) dst[p] = src[p * stride_w_];
          }
          std::fill(dst + cr.hi, dst + ow_, 0.0f);
        }
        std::fill(col + rr.hi * ow_, col + oh_ * ow_, 0.0f);
      }
    }
  }
}

void Conv::run(const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  const float* wt = static_cast<const float*>(in[1]);
  const float* bias = has_bias_ ? static_cast<const float*>(in[2]) : nullptr;
  float* y = static_cast<float*>(out[0]);
  const int64_t spatial = oh_ * ow_, kdim = cg_ * kh_ * kw_;
  const float beta = has_bias_ ? 1.0f : 0.0f;
  for (int64_t b = 0; b < n_; ++b) {
    for (int64_t g = 0; g < group_; ++g) {
      const float* xg = x + (b * c_ + g * cg_) * h_ * w_;
      const float* col = xg;
      if (!direct_) {
        im2col(xg, col_.data());
        col = col_.data();
      }
      // Bias and ReLU touch one (batch, group) block while it is still in cache.
      float* yg = y + (b * m_ + g * mg_) * spatial;
      if (bias)  // pre-fill with the bias so that sgemm adds to it (beta = 1)
        for (int64_t i = 0; i < mg_; ++i) std::fill(yg + i * spatial, yg + (i + 1) * spatial, bias[g * mg_ + i]);
      dnnl_sgemm('N', 'N', mg_, spatial, kdim, 1.0f, wt + g * mg_ * kdim, kdim, col, spatial, beta, yg, spatial);
      if (relu_) relu_inplace(yg, mg_ * spatial);
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelConfig& cfg) {
  if (auto dnnl = make_dnnl_conv(cfg)) return dnnl;
  return std::make_unique<Conv>(cfg);
}

}  // namespace of::kernels::cpu
