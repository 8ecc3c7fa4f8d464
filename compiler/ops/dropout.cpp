// SPDX-License-Identifier: Apache-2.0
// Dropout: the identity in inference and evaluation plans and with ratio 0; in a training plan
// the `dropout` kernel, whose mask is keyed by (seed, this node, piece of the run, element):
// the same on any layout and after a resume. PyTorch's CPU generator draws other masks, so
// comparisons with PyTorch run with p = 0; the kernel has tests of its own.
#include <cstring>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

float ratio_of(OpCtx& c) {
  if (!c.has_in(1)) return c.attrs().get_float("ratio", 0.5f);
  const std::vector<uint8_t>* d = c.const_data(1);
  if (!d || c.in(1).dtype != DType::f32 || numel(c.in(1).shape) != 1) c.fail("input 1 (ratio) must be a constant f32 scalar");
  float r;
  std::memcpy(&r, d->data(), 4);
  return r;
}

void infer_dropout(OpCtx& c) {
  c.expect_arity(1, 3, 2);
  c.expect_float(0);
  const float ratio = ratio_of(c);
  if (!(ratio >= 0.0f && ratio < 1.0f)) c.fail("ratio {} is outside [0, 1)", ratio);  // NaN too
  if (!c.drop_output_if_unused(1)) c.fail("its mask output is read; only Dropout's first output is supported");
  c.out(0) = c.in(0);
}

// Input 2, training_mode (opset 12+): a Dropout exported in eval mode stays the identity even
// in a training plan, as BatchNorm's training_mode decides for it.
bool exported_for_training(OpCtx& c) {
  if (!c.has_in(2)) return true;
  const std::vector<uint8_t>* d = c.const_data(2);
  if (!d || c.in(2).dtype != DType::bool_ || d->size() != 1) c.fail("input 2 (training_mode) must be a constant bool");
  return (*d)[0] != 0;
}

void lower_dropout(OpCtx& c) {
  const float ratio = ratio_of(c);
  if (!c.training() || ratio == 0.0f || !exported_for_training(c)) {
    c.set_kernel("copy");
  } else {
    Attrs a;
    a.set_float("ratio", ratio);
    a.set_int("stream", random_stream(c.node().name));  // random.cpp: its own stream, stable across compilations
    c.set_kernel("dropout", std::move(a));
  }
  c.set_runtime_inputs({0});
}

// The same mask on dY (the kernel recomputes it from the same key and counters).
void grad_dropout(GradCtx& g) {
  if (!g.wants(0)) return;
  const bool random = g.node().kernel == "dropout";
  g.add_in_grad(0, g.emit("DropoutGrad", random ? "dropout_grad" : "copy", {g.out_grad(0)}, random ? g.attrs() : Attrs{},
                          g.desc(g.in(0))));
}

}  // namespace

// The mask is keyed by each element's index in the whole tensor: a device holding a part would
// need the part's offsets, which kernels are not told yet. Every device computes the whole.
constexpr std::string_view kWhyWhole = "its mask is keyed by the global element index, and a part does not know its offsets";

OpDef dropout_def() {
  return {"Dropout", infer_dropout, lower_dropout, grad_dropout, {real_attr("ratio"), int_attr("seed", -kMaxInt, kMaxInt)},
          {broadcast_only("dropout", kWhyWhole), broadcast_only("dropout_grad", kWhyWhole)}};
}

}  // namespace of::compiler
