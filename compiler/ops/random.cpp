// SPDX-License-Identifier: Apache-2.0
// RandomUniformLike, RandomNormalLike (torch.rand_like, torch.randn_like: a VAE's
// reparameterisation, timm's drop_path, which torch.rand of x's batch shape exports as a *Like)
// and RandomUniform, RandomNormal (a constant shape): the `random` kernel, whose numbers are keyed
// by (ofrun --seed, this node, piece of the run, element), as Dropout's masks are: the same on
// any layout and after a resume, in training and evaluation plans alike, as torch draws in both
// modes; not PyTorch's numbers. They pass no gradient, as torch's. A *Like op's input gives only
// the shape: the task reads nothing.
#include "compiler/ops/ops.h"

namespace of::compiler {

// FNV-1a of the node's name: each random op draws its own stream, stable across compilations.
int64_t random_stream(const std::string& node_name) {
  uint32_t h = 2166136261u;
  for (unsigned char ch : node_name) h = (h ^ ch) * 16777619u;
  return int64_t(h);
}

namespace {

bool normal(const OpCtx& c) { return c.node().op_type == "RandomNormal" || c.node().op_type == "RandomNormalLike"; }
bool like(const OpCtx& c) { return c.node().op_type == "RandomUniformLike" || c.node().op_type == "RandomNormalLike"; }

void infer_random(OpCtx& c) {
  if (c.attrs().has("seed"))
    c.fail("attribute seed is not supported: ofrun --seed keys every random op (and torch's export never writes it)");
  if (c.attrs().get_int("dtype", 1) != 1) c.fail("dtype {} is not float32", c.attrs().get_int("dtype", 1));
  if (like(c)) {
    c.expect_arity(1, 1);
    c.out(0) = TensorDesc{c.in(0).shape, DType::f32};
    return;
  }
  c.expect_arity(0, 0);
  Shape shape;
  for (int64_t d : c.attrs().get_ints("shape")) {
    if (d < 0) c.fail("shape has a negative dimension {}", d);
    shape.push_back(d);
  }
  if (!c.attrs().has("shape")) c.fail("attribute shape is required");
  c.out(0) = TensorDesc{shape, DType::f32};
}

void lower_random(OpCtx& c) {
  Attrs a;
  a.set_int("normal", normal(c) ? 1 : 0);
  a.set_float("a", normal(c) ? c.attrs().get_float("mean", 0.0f) : c.attrs().get_float("low", 0.0f));
  a.set_float("b", normal(c) ? c.attrs().get_float("scale", 1.0f) : c.attrs().get_float("high", 1.0f));
  a.set_int("stream", random_stream(c.node().name));
  c.set_kernel("random", std::move(a));
  c.set_runtime_inputs({});
}

void grad_none(GradCtx&) {}  // the numbers depend on nothing the model trains

const std::vector<AttrRule> kRules = {int_attr("dtype", 1, 1), real_attr("low"), real_attr("high"), real_attr("mean"),
                                      real_attr("scale"), ints_attr("shape", 0, kMaxDim)};
constexpr std::string_view kWhyWhole = "its numbers are keyed by the global element index, and a part does not know its offsets";

}  // namespace

OpDef random_normal_def() { return {"RandomNormal", infer_random, lower_random, grad_none, kRules, {broadcast_only("random", kWhyWhole)}}; }
OpDef random_normal_like_def() { return {"RandomNormalLike", infer_random, lower_random, grad_none, kRules}; }
OpDef random_uniform_def() { return {"RandomUniform", infer_random, lower_random, grad_none, kRules}; }
OpDef random_uniform_like_def() { return {"RandomUniformLike", infer_random, lower_random, grad_none, kRules}; }

}  // namespace of::compiler
