// SPDX-License-Identifier: Apache-2.0
#include "kernels/kernel_work.h"

#include <algorithm>

namespace of::kernels {

namespace {

double elements(const TensorDesc& d) { return d.shape.empty() ? 1.0 : double(numel(d.shape)); }

const Shape& shape_at(const std::vector<TensorDesc>& v, size_t i) {
  static const Shape none;
  return i < v.size() ? v[i].shape : none;
}

}  // namespace

KernelWork kernel_work(std::string_view kernel, const Attrs& attrs, const std::vector<TensorDesc>& inputs,
                       const std::vector<TensorDesc>& outputs) {
  KernelWork w;
  for (const TensorDesc& d : inputs) w.bytes += elements(d) * double(dtype_size(d.dtype));
  for (const TensorDesc& d : outputs) w.bytes += elements(d) * double(dtype_size(d.dtype));
  const double out = outputs.empty() ? 0.0 : elements(outputs[0]);
  w.flops = out;
  const Shape& a = shape_at(inputs, 0);
  if (kernel == "gemm" && a.size() == 2) {
    w.kind = WorkKind::matrix;
    w.flops = 2.0 * out * double(a[attrs.get_int("trans_a", 0) ? 0 : 1]);
  } else if ((kernel == "matmul" || kernel == "matmul_tb") && !a.empty()) {
    w.kind = WorkKind::matrix;
    const bool trans_a = kernel == "matmul" && a.size() >= 2 && attrs.get_int("trans_a", 0);
    w.flops = 2.0 * out * double(a[a.size() - (trans_a ? 2 : 1)]);
  } else if (kernel == "conv" || kernel == "conv_grad_data" || kernel == "conv_grad_weight") {
    // Per output element of the forward pass, in_channels x kernel area multiply-adds
    // (numel(w) / out_channels); both gradients cost the same as the forward pass.
    const Shape& y = kernel == "conv" ? shape_at(outputs, 0) : a;                          // conv: y; grads: dy
    const Shape& f = kernel == "conv_grad_weight" ? shape_at(outputs, 0) : shape_at(inputs, 1);  // the filter
    if (!y.empty() && !f.empty()) {
      w.kind = WorkKind::convolution;
      w.flops = 2.0 * double(numel(y)) * double(numel(f)) / double(std::max<int64_t>(f[0], 1));
    }
  } else if (kernel == "lstm" || kernel == "gru" || kernel == "rnn" || kernel == "lstm_grad" || kernel == "gru_grad" ||
             kernel == "rnn_grad") {
    // Per step and direction, the gates' products with X_t and H_{t-1} (W [D, G*H, I],
    // R [D, G*H, H]); backward through time multiplies by both again and by their transposes
    // for the weight gradients: twice the forward.
    const Shape& r = shape_at(inputs, 2);
    if (a.size() >= 2 && !r.empty()) {
      w.kind = WorkKind::recurrent;
      const double steps = double(a[0]) * double(a[1]);
      const double f = 2.0 * steps * double(numel(shape_at(inputs, 1)) + numel(r));
      w.flops = kernel.ends_with("_grad") ? 2.0 * f : f;
    }
  }
  return w;
}

std::string_view work_kind_name(WorkKind k) {
  switch (k) {
    case WorkKind::matrix: return "matrix";
    case WorkKind::convolution: return "convolution";
    case WorkKind::recurrent: return "recurrent";
    case WorkKind::memory: return "memory";
  }
  return "?";
}

}  // namespace of::kernels
