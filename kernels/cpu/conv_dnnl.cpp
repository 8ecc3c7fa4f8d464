// SPDX-License-Identifier: Apache-2.0
// conv and its two gradients through oneDNN's convolution primitives, for enough input
// channels to fill its vector lanes. Per act the NCHW tensors are reordered into the blocked
// layouts the primitive picked, convolved and reordered back (a constant weight of an inference
// plan is reordered once). Forward, measured on one core for [32,32,16,16] -> 64 channels, 3x3:
// 2.1 ms against 2.7 ms for im2col + sgemm; for 3 input channels im2col wins (0.7 vs 1.1 ms), so
// the factories decline below 16. The gradients of resnet18 (batch 8, 224 px, one thread) take
// 1.04 s for 4 steps against 1.65 s with im2col + sgemm.
// run() uses the C API with preset arguments and kernel-owned buffers and scratchpads: it
// allocates nothing.
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/dnnl_util.h"

#include <algorithm>
#include <optional>

#include "kernels/cpu/check.h"
#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/thread_workspace.h"

namespace of::kernels::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

constexpr int64_t kMinChannels = 16;

// A conv of X [N,C,(D,)H,W] by W [M,C,(kD,)kH,kW] into Y [N,M,(OD,)OH,OW] as oneDNN describes it.
struct ConvDescs {
  memory::desc x, w, y, bias;
  memory::dims strides, pad_l, pad_r, dilations;  // oneDNN counts dilation from 0, ONNX from 1

  static memory::desc any(const memory::desc& md) { return memory::desc(md.dims(), dt::f32, tag::any); }
  dnnl::convolution_forward::desc forward(dnnl::prop_kind kind, bool with_bias) const {
    return with_bias ? dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, any(x), any(w), bias,
                                                       any(y), strides, dilations, pad_l, pad_r)
                     : dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, any(x), any(w),
                                                       any(y), strides, dilations, pad_l, pad_r);
  }
  // The forward primitive the backward ones take as their hint.
  dnnl::convolution_forward::primitive_desc training_hint() const {
    return {forward(dnnl::prop_kind::forward_training, false), primitive_attr(), cpu_engine()};
  }
};

// X or Y, channels first, as given: [N,C,H,W] or [N,C,D,H,W].
memory::desc activation_desc(const memory::dims& dims) {
  return memory::desc(dims, dt::f32, dims.size() == 4 ? tag::nchw : tag::ncdhw);
}

// The oneDNN description of a configuration the im2col kernels already validated, or nothing
// when oneDNN's primitive is not the faster choice (groups, few input channels) or not f32.
std::optional<ConvDescs> conv_descs(const KernelConfig& cfg, const Shape& x_given, const Shape& w_given, const Shape& y_given) {
  const Shape x = as_2d_window(x_given), w = as_2d_window(w_given), y = as_2d_window(y_given);  // 1-D: height 1
  if ((x.size() != 4 && x.size() != 5) || w.size() != x.size() || y.size() != x.size() || cfg.attrs.get_int("group", 1) != 1)
    return std::nullopt;
  const size_t n = x.size() - 2;  // spatial axes: 2 or 3
  if (x[1] < kMinChannels || w[1] != x[1] || y[1] != w[0] || y[0] != x[0]) return std::nullopt;
  for (const auto* list : {&cfg.inputs, &cfg.outputs})
    for (const TensorDesc& d : *list)
      if (d.dtype != DType::f32) return std::nullopt;
  const auto st = get_ints_n(cfg, "conv", "strides", n, std::vector<int64_t>(n, 1));
  const auto pads = get_ints_n(cfg, "conv", "pads", 2 * n, std::vector<int64_t>(2 * n, 0));
  const auto dil = get_ints_n(cfg, "conv", "dilations", n, std::vector<int64_t>(n, 1));
  // The output size must be what these attributes give (the im2col kernels report mismatches).
  memory::dims strides, pad_l, pad_r, dilations;
  for (size_t i = 0; i < n; ++i) {
    int64_t span = x[2 + i] + pads[i] + pads[i + n] - dil[i] * (w[2 + i] - 1) - 1;
    if (st[i] < 1 || span < 0 || span / st[i] + 1 != y[2 + i]) return std::nullopt;
    strides.push_back(st[i]);
    pad_l.push_back(pads[i]);
    pad_r.push_back(pads[i + n]);
    dilations.push_back(dil[i] - 1);
  }
  return ConvDescs{activation_desc(x), memory::desc(memory::dims(w.begin(), w.end()), dt::f32, n == 2 ? tag::oihw : tag::oidhw),
                   activation_desc(y), memory::desc({w[0]}, dt::f32, tag::x), strides, pad_l, pad_r, dilations};
}

void set_handle(const memory& m, const void* p) { dnnl_memory_set_data_handle(m.get(), const_cast<void*>(p)); }

// in: X, W[, B]; out: Y.
class DnnlConv final : public Kernel {
 public:
  DnnlConv(const KernelConfig& cfg, const ConvDescs& d, bool relu)
      : has_bias_(cfg.inputs.size() == 3), relu_(relu), size_(numel(cfg.outputs[0].shape)) {
    // The relu runs after the convolution (relu_inplace), not as oneDNN's eltwise_relu post-op,
    // which maps NaN to 0 where torch.relu keeps NaN.
    dnnl::convolution_forward::primitive_desc pd(d.forward(dnnl::prop_kind::forward_inference, has_bias_),
                                                 primitive_attr(), cpu_engine());
    x_ = user_memory(d.x);
    y_ = user_memory(d.y);
    const memory x = seq_.input(x_, pd.src_desc());
    // A constant weight is reordered once, here; one that changes every step (training) is
    // reordered per act, before the convolution (a small copy next to the product).
    memory w;
    if (cfg.constants.size() > 1 && cfg.constants[1] != nullptr) {
      w = seq_.keep(pack_weights(d.w, cfg.constants[1], pd.weights_desc()));
    } else {
      w_ = user_memory(d.w);
      w = seq_.input(w_, pd.weights_desc());
    }
    const memory y = seq_.output(y_, pd.dst_desc());
    std::vector<dnnl_exec_arg_t> args = {{DNNL_ARG_SRC, x.get()}, {DNNL_ARG_WEIGHTS, w.get()}, {DNNL_ARG_DST, y.get()}};
    if (has_bias_) {
      b_ = user_memory(d.bias);
      args.push_back({DNNL_ARG_BIAS, b_.get()});
    }
    seq_.add(dnnl::convolution_forward(pd), std::move(args), pd.scratchpad_desc());
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    set_handle(x_, in[0]);
    if (w_) set_handle(w_, in[1]);
    if (has_bias_) set_handle(b_, in[2]);
    set_handle(y_, out[0]);
    seq_.run(ctx);
    if (relu_) relu_inplace(static_cast<float*>(out[0]), size_);
  }

  size_t workspace_bytes() const override { return seq_.workspace_bytes(); }

 private:
  DnnlSequence seq_;
  memory x_, w_, b_, y_;  // user buffers (w_ empty for a packed constant weight)
  bool has_bias_;
  bool relu_;
  int64_t size_;  // elements of the output
};

// in: dY, W[, bias]; out: dX (+ bias: ConvTranspose's forward pass).
class DnnlConvGradData final : public Kernel {
 public:
  DnnlConvGradData(const ConvDescs& d, const KernelConfig& cfg)
      : bias_(cfg.inputs.size() == 3), g_(conv_grad_geometry(cfg, "conv_grad_data", true)) {
    dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, ConvDescs::any(d.x),
                                               ConvDescs::any(d.w), ConvDescs::any(d.y), d.strides, d.dilations,
                                               d.pad_l, d.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, primitive_attr(), cpu_engine(), d.training_hint());
    dy_ = user_memory(d.y);
    w_ = user_memory(d.w);
    dx_ = user_memory(d.x);
    const memory dy = seq_.input(dy_, pd.diff_dst_desc());
    const memory w = seq_.input(w_, pd.weights_desc());
    const memory dx = seq_.output(dx_, pd.diff_src_desc());
    seq_.add(dnnl::convolution_backward_data(pd),
             {{DNNL_ARG_DIFF_DST, dy.get()}, {DNNL_ARG_WEIGHTS, w.get()}, {DNNL_ARG_DIFF_SRC, dx.get()}},
             pd.scratchpad_desc());
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    set_handle(dy_, in[0]);
    set_handle(w_, in[1]);
    set_handle(dx_, out[0]);
    seq_.run(ctx);
    if (bias_) add_channel_bias(g_, static_cast<const float*>(in[2]), static_cast<float*>(out[0]));
  }

  size_t workspace_bytes() const override { return seq_.workspace_bytes(); }

 private:
  bool bias_;
  ConvGeometry g_;
  DnnlSequence seq_;
  memory dy_, w_, dx_;
};

// The same convolution over `n` images of the batch.
ConvDescs with_batch(const ConvDescs& d, int64_t n) {
  ConvDescs out = d;
  memory::dims x = d.x.dims(), y = d.y.dims();
  x[0] = y[0] = n;
  out.x = activation_desc(x);
  out.y = activation_desc(y);
  return out;
}

// Elements of `dims` from axis `from` on.
int64_t count(const memory::dims& dims, size_t from = 0) {
  int64_t c = 1;
  for (size_t i = from; i < dims.size(); ++i) c *= dims[i];
  return c;
}

// The copies of dY and X in the primitive's layouts are most of conv_grad_weight's scratch (the
// benchmarks' CNN: 3.1 of 3.2 MB, a whole batch of both), so it works through the batch in
// chunks whose copies take at most this much (or one image).
constexpr int64_t kChunkBytes = int64_t(1) << 20;

// Images per chunk: the largest divisor of the batch whose dY and X take at most kChunkBytes (or
// one image), unless that saves less than the copy of dW each later chunk adds (resnet18's last
// layers: a 9.4 MB dW next to 1.6 MB of dY and X): then the whole batch.
int64_t grad_weight_chunk(const ConvDescs& d) {
  const memory::dims x = d.x.dims(), y = d.y.dims(), w = d.w.dims();
  const int64_t n = x[0], per_image = (count(x, 1) + count(y, 1)) * int64_t(sizeof(float));
  const int64_t dw = count(w) * int64_t(sizeof(float));
  int64_t best = 1;
  for (int64_t c = 1; c <= n; ++c)
    if (n % c == 0 && c * per_image <= kChunkBytes) best = c;
  return best * per_image + dw < n * per_image ? best : n;
}

// in: dY, X; out: dW, summed over the batch's chunks: the first writes dW, each later one its own
// dW into the scratch, added into the output after it.
class DnnlConvGradWeight final : public Kernel {
 public:
  explicit DnnlConvGradWeight(const ConvDescs& whole) {
    const memory::dims xd = whole.x.dims(), yd = whole.y.dims(), wd = whole.w.dims();
    const int64_t chunk = grad_weight_chunk(whole);
    chunks_ = xd[0] / std::max<int64_t>(chunk, 1);
    x_step_ = chunk * count(xd, 1);
    y_step_ = chunk * count(yd, 1);
    dw_size_ = count(wd);
    const ConvDescs d = with_batch(whole, chunk);
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, ConvDescs::any(d.x),
                                                  ConvDescs::any(d.w), ConvDescs::any(d.y), d.strides,
                                                  d.dilations, d.pad_l, d.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, primitive_attr(), cpu_engine(), d.training_hint());
    dy_ = user_memory(d.y);
    x_ = user_memory(d.x);
    dw_ = user_memory(d.w);
    const memory dy = seq_.input(dy_, pd.diff_dst_desc());
    const memory x = seq_.input(x_, pd.src_desc());
    const memory dw = seq_.output(dw_, pd.diff_weights_desc());
    seq_.add(dnnl::convolution_backward_weights(pd),
             {{DNNL_ARG_DIFF_DST, dy.get()}, {DNNL_ARG_SRC, x.get()}, {DNNL_ARG_DIFF_WEIGHTS, dw.get()}},
             pd.scratchpad_desc());
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    auto* scratch = static_cast<uint8_t*>(act_workspace(ctx, workspace_bytes()));
    float* part = reinterpret_cast<float*>(scratch + seq_.workspace_bytes());
    const float* dy = static_cast<const float*>(in[0]);
    const float* x = static_cast<const float*>(in[1]);
    float* dw = static_cast<float*>(out[0]);
    for (int64_t k = 0; k < chunks_; ++k) {
      set_handle(dy_, dy + k * y_step_);
      set_handle(x_, x + k * x_step_);
      set_handle(dw_, k == 0 ? dw : part);
      seq_.run(scratch);
      if (k > 0)
        for (int64_t i = 0; i < dw_size_; ++i) dw[i] += part[i];
    }
  }
  size_t workspace_bytes() const override {
    const size_t part = chunks_ > 1 ? size_t(dw_size_) * sizeof(float) : 0;
    return seq_.workspace_bytes() + (part + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  }

 private:
  DnnlSequence seq_;
  memory dy_, x_, dw_;
  int64_t chunks_ = 1, x_step_ = 0, y_step_ = 0, dw_size_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_dnnl_conv(const KernelConfig& cfg) {
  if (cfg.inputs.size() < 2 || cfg.outputs.size() != 1) return nullptr;
  const auto d = conv_descs(cfg, cfg.inputs[0].shape, cfg.inputs[1].shape, cfg.outputs[0].shape);
  if (!d) return nullptr;
  return std::make_unique<DnnlConv>(cfg, *d, fused_relu(cfg, "conv"));
}

std::unique_ptr<Kernel> make_dnnl_conv_grad_data(const KernelConfig& cfg) {
  const auto d = conv_descs(cfg, cfg.outputs[0].shape, cfg.inputs[1].shape, cfg.inputs[0].shape);
  if (!d) return nullptr;
  return std::make_unique<DnnlConvGradData>(*d, cfg);
}

std::unique_ptr<Kernel> make_dnnl_conv_grad_weight(const KernelConfig& cfg) {
  const auto d = conv_descs(cfg, cfg.inputs[1].shape, cfg.outputs[0].shape, cfg.inputs[0].shape);
  if (!d) return nullptr;
  return std::make_unique<DnnlConvGradWeight>(*d);
}

}  // namespace of::kernels::cpu
