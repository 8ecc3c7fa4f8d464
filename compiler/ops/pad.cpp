// SPDX-License-Identifier: Apache-2.0
// Pad: what torch exports for F.pad, nn.ZeroPad2d / ConstantPad / ReflectionPad / ReplicationPad
// and, before an AveragePool, nn.AvgPool2d (torchvision's DenseNet), in opsets 13-18: pads from a
// constant input (over every axis, or over input 3's `axes`, opset 18), the fill from a constant
// input (default 0); modes constant, reflect and edge. Cropping (negative pads) and wrap (opset
// 19) are refused by name.
#include <fmt/format.h>

#include <cstring>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

// Every axis's pads, before then after (2 x rank, ONNX's order), however the node gives them.
std::vector<int64_t> pads_of(OpCtx& c) {
  const auto rank = int64_t(c.in(0).shape.size());
  const std::vector<int64_t> given = c.const_ints(1);
  std::vector<int64_t> axes;
  if (c.has_in(3)) {
    for (int64_t a : c.const_ints(3)) axes.push_back(c.axis(a, rank, "input 3 (axes)"));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (given.size() != 2 * axes.size())
    c.fail("pads [{}] has {} entries, expected 2 x {} (the axes padded) for input 0 {}", fmt::join(given, ","), given.size(),
           axes.size(), shape_str(c.in(0).shape));
  std::vector<int64_t> pads(size_t(2 * rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t b = given[k], a = given[k + axes.size()];
    if (b < 0 || a < 0)
      c.fail("pads [{}] has a negative entry: cropping with Pad is not supported", fmt::join(given, ","));
    if (double(b) > kMaxDim || double(a) > kMaxDim) c.fail("pads [{}] has an entry above 2^31", fmt::join(given, ","));
    pads[size_t(axes[k])] += b;
    pads[size_t(axes[k] + rank)] += a;
  }
  return pads;
}

std::string mode_of(const OpCtx& c) {
  const std::string mode = c.attrs().get_str("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    c.fail("mode '{}' is not supported (constant, reflect and edge are)", mode);
  return mode;
}

float value_of(OpCtx& c) {
  if (!c.has_in(2)) return 0.0f;
  const std::vector<uint8_t>* d = c.const_data(2);
  if (!d || c.in(2).dtype != DType::f32 || numel(c.in(2).shape) != 1)
    c.fail("input 2 (constant_value) must be a constant f32 scalar, is {}", d ? shape_str(c.in(2).shape) : "computed at run time");
  float v;
  std::memcpy(&v, d->data(), sizeof v);
  return v;
}

void infer_pad(OpCtx& c) {
  c.expect_arity(2, 4);
  c.expect_float(0);
  const std::string mode = mode_of(c);
  const std::vector<int64_t> pads = pads_of(c);
  value_of(c);
  Shape y = c.in(0).shape;
  const size_t rank = y.size();
  for (size_t d = 0; d < rank; ++d) {
    const int64_t b = pads[d], a = pads[d + rank], n = y[d];
    if (mode == "reflect" && (b > 0 || a > 0) && (b >= n || a >= n))
      c.fail("reflect pads {} and {} of axis {} must be below its size {} (input 0 {})", b, a, d, n, shape_str(c.in(0).shape));
    if (mode == "edge" && (b > 0 || a > 0) && n == 0) c.fail("edge pads axis {}, which is empty", d);
    y[d] = b + n + a;
  }
  c.out(0) = TensorDesc{y, DType::f32};
}

void lower_pad(OpCtx& c) {
  Attrs a;
  a.set_ints("pads", pads_of(c));
  a.set_str("mode", mode_of(c));
  a.set_float("value", value_of(c));
  c.set_kernel("pad", std::move(a));
  c.set_runtime_inputs({0});
}

// dX: each input element's gradient is the sum of dY where it was read (once in constant mode:
// a crop; reflect and edge also where their pads copied it).
void grad_pad(GradCtx& g) {
  if (!g.wants(0)) return;
  g.add_in_grad(0, g.emit("PadGrad", "pad_grad", {g.out_grad(0)}, g.attrs(), g.desc(g.in(0))));
}

// pad and pad_grad: split along any axis that is not padded (each part pads its own rows alike).
void pad_sbp(const Graph&, const Node& n, std::vector<Signature>& out) {
  const std::vector<int64_t> pads = n.kernel_attrs.get_ints("pads");
  const auto rank = int64_t(pads.size() / 2);
  for (int64_t d = 0; d < rank; ++d)
    if (pads[size_t(d)] == 0 && pads[size_t(d + rank)] == 0)
      out.push_back(Signature{{Sbp::S(d)}, {Sbp::S(d)}, Signature::Tweak::none, true});
}

}  // namespace

OpDef pad_def() {
  return {"Pad", infer_pad, lower_pad, grad_pad, {}, {sbp_rule("pad", pad_sbp), sbp_rule("pad_grad", pad_sbp)}};
}

}  // namespace of::compiler
