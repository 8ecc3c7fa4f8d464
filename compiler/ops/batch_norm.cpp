// SPDX-License-Identifier: Apache-2.0
// BatchNormalization: Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel, with the
// running statistics (inference, evaluation, frozen BN) or, in a training plan of a train-mode
// export, the batch's (torch's train mode; add-optimizer adds the running-statistics update).
#include <cmath>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

// Torch's train mode: the exported node says training_mode = 1 (opset 14+) or has the running
// statistics among its outputs (opset 13). Only a training plan normalises with batch statistics;
// inference and evaluation plans of the same export use the running ones, as torch's eval mode.
bool batch_statistics(OpCtx& c) {
  return c.training() && (c.attrs().get_int("training_mode", 0) != 0 || c.num_outputs() > 1);
}

void infer_batch_norm(OpCtx& c) {
  c.expect_arity(5, 5, 5);
  const bool train = batch_statistics(c);
  // The running statistics written as outputs are read by nothing in torch's exports: the update
  // is a task of its own (add-optimizer), so they are dropped.
  while (c.num_outputs() > 1)
    if (!c.drop_output_if_unused(c.num_outputs() - 1))
      c.fail("reads the running mean or variance BatchNormalization writes in training; not supported");
  for (size_t i = 0; i < 5; ++i) c.expect_float(i);
  const Shape& x = c.in(0).shape;
  if (x.size() < 2) c.fail("input 0 (X) has shape {}, expected rank >= 2 [N,C,...]", shape_str(x));
  if (x[1] == 0) c.fail("input 0 (X) {} has no channels", shape_str(x));
  static constexpr const char* kNames[] = {"X", "scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    if (c.in(i).shape != Shape{x[1]})
      c.fail("input {} ({}) has shape {}, expected [{}] (the channels of input 0 {})", i, kNames[i],
             shape_str(c.in(i).shape), x[1], shape_str(x));
  if (train && numel(x) / x[1] < 2)
    c.fail("input 0 (X) {} has one value per channel: batch statistics need more (torch refuses it too)", shape_str(x));
  const TensorDesc channel{{x[1]}, DType::f32};
  c.out(0) = c.in(0);
  c.node().state_inputs = {3, 4};
  if (train) {  // what the backward pass and the running-statistics update read
    c.add_output("saved_mean", channel);
    c.add_output("saved_invstd", channel);
    c.add_output("batch_var", channel);
  }
}

void lower_batch_norm(OpCtx& c) {
  Attrs a;
  a.set_float("epsilon", c.attrs().get_float("epsilon", 1e-5f));
  if (c.num_outputs() == 1) {
    c.set_kernel("batch_norm", std::move(a));
    return;
  }
  // ONNX's momentum weighs the old running value (torch exports 1 - its own momentum).
  a.set_float("momentum", 1.0f - c.attrs().get_float("momentum", 0.9f));
  c.set_kernel("batch_norm_train", std::move(a));
  c.set_runtime_inputs({0, 1, 2});
}

// Batch statistics (torch's train mode): dX, dscale and dB in one kernel, from the saved mean
// and inverse standard deviation (the batch's mean and variance depend on X too).
void grad_batch_norm_train(GradCtx& g) {
  const ValueId x = g.in(0), dy = g.out_grad(0);
  const TensorDesc xd = g.desc(x), cd = g.desc(g.in(1));
  const std::vector<ValueId> d = g.emit_n("BatchNormalizationGrad", "batch_norm_train_grad",
                                          {dy, x, g.in(1), g.out(1), g.out(2)}, {}, {xd, cd, cd});
  for (size_t i = 0; i < 3; ++i)
    if (g.wants(i)) g.add_in_grad(i, d[i]);
}

// Training treats the running mean and variance as frozen statistics (what torch's BN does in
// eval mode, or FrozenBatchNorm2d): with s = 1/sqrt(var + eps) and xhat = (X - mean) s,
// dX = dY scale s, dscale = sum(dY xhat), dB = sum(dY), sums over every axis but the channels.
// mean and var get no gradient: they stay constants of the plan.
void grad_batch_norm(GradCtx& g) {
  if (g.node().kernel == "batch_norm_train") return grad_batch_norm_train(g);
  const ValueId x = g.in(0), dy = g.out_grad(0);
  const Shape xs = g.desc(x).shape;
  const int64_t c = xs[1];
  const std::optional<std::vector<float>> mean = g.const_floats(g.in(3)), var = g.const_floats(g.in(4));
  if (!mean || !var) g.fail("training needs constant running mean and variance (inputs 3 and 4)");
  const float eps = g.attrs().get_float("epsilon", 1e-5f);
  std::vector<float> inv_std(size_t(c), 0.0f), neg_mean(size_t(c), 0.0f);
  for (int64_t k = 0; k < c; ++k) {
    inv_std[size_t(k)] = float(1.0 / std::sqrt(double((*var)[size_t(k)]) + double(eps)));
    neg_mean[size_t(k)] = -(*mean)[size_t(k)];
  }
  // Per-channel values broadcast against X as [C,1,...,1].
  Shape channel{c};
  for (size_t k = 2; k < xs.size(); ++k) channel.push_back(1);
  const ValueId s = g.constant(channel, inv_std);
  const TensorDesc xd = g.desc(x);
  if (g.wants(0)) {
    const ValueId scale = g.reshape(g.in(1), channel);
    const ValueId a = g.emit("Mul", "mul", {scale, s}, {}, TensorDesc{channel, DType::f32});
    g.add_in_grad(0, g.emit("Mul", "mul", {dy, a}, {}, xd));
  }
  if (g.wants(1)) {
    const ValueId centered = g.emit("Add", "add", {x, g.constant(channel, neg_mean)}, {}, xd);
    const ValueId xhat = g.emit("Mul", "mul", {centered, s}, {}, xd);
    const ValueId prod = g.emit("Mul", "mul", {dy, xhat}, {}, xd);
    g.add_in_grad(1, g.reshape(g.unbroadcast(prod, channel), {c}));
  }
  if (g.wants(2)) g.add_in_grad(2, g.reshape(g.unbroadcast(dy, channel), {c}));
}

}  // namespace

// Batch statistics under data parallelism, as torch's DDP: each device normalizes its own part
// of the batch with that part's statistics, and its backward pass uses them; weight gradients
// are partial sums (averaged with the loss's). Each device updates its own running statistics
// from its own part; the checkpoint keeps device 0's, as DDP's rank 0 does. The statistics a
// device saves are its own (B on the level, but no device's equals another's): so on a
// data-parallel level the batch split is the only signature of the forward, the backward and
// the update alike, and they can never be mixed. On any other level (tensor parallel) the
// channels split, which changes no number; or every device computes the whole.
void train_sbp(const Graph& g, const Node& n, std::vector<Signature>& out, bool grad) {
  // forward (X, scale, B, mean, var) -> (Y, saved mean, saved inverse std, batch variance);
  // backward (dY, X, scale, saved mean, saved inverse std) -> (dX, dscale, dB).
  const size_t x = grad ? 1 : 0;
  Signature batch{{}, {}, Signature::Tweak::none, true, true};
  for (size_t i = 0; i < n.inputs.size(); ++i) batch.in.push_back(i <= x ? Sbp::S(0) : Sbp::B());
  batch.out = grad ? std::vector<Sbp>{Sbp::S(0), Sbp::P(), Sbp::P()} : std::vector<Sbp>(n.outputs.size(), Sbp::B());
  batch.out[0] = Sbp::S(0);
  out.push_back(batch);
  if (sbp::shape_of(g, n.inputs[x])[1] <= 1) return;
  Signature channels{{}, {}, Signature::Tweak::none, true};
  channels.never_data_parallel = true;
  for (size_t i = 0; i < n.inputs.size(); ++i) channels.in.push_back(i <= x ? Sbp::S(1) : Sbp::S(0));
  channels.out = std::vector<Sbp>(n.outputs.size(), Sbp::S(0));
  channels.out[0] = Sbp::S(1);
  out.push_back(channels);
}

// split-batch-norm's halves of the forward, laid out as the whole: stats X -> (saved mean, saved
// inverse std, batch variance), apply (X, scale, B, saved mean, saved inverse std) -> Y. The pass
// runs per device after parallelize; these say what a placed pair would need.
void split_sbp(const Node& n, std::vector<Signature>& out, bool apply) {
  Signature batch{{}, {}, Signature::Tweak::none, true, true};
  Signature channels{{}, {}, Signature::Tweak::none, true};
  channels.never_data_parallel = true;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    batch.in.push_back(i == 0 ? Sbp::S(0) : Sbp::B());
    channels.in.push_back(i == 0 ? Sbp::S(1) : Sbp::S(0));
  }
  batch.out = apply ? std::vector<Sbp>{Sbp::S(0)} : std::vector<Sbp>(n.outputs.size(), Sbp::B());
  channels.out = apply ? std::vector<Sbp>{Sbp::S(1)} : std::vector<Sbp>(n.outputs.size(), Sbp::S(0));
  out.push_back(batch);
  out.push_back(channels);
}

// The update (batch mean, batch variance, running mean, running variance, num_batches_tracked):
// each device its own copy (B), or per channel on a tensor-parallel level.
void stats_update_sbp(const Graph& g, const Node& n, std::vector<Signature>& out) {
  sbp::update(g, n, out);
  for (Signature& s : out) s.never_data_parallel = true;
}

OpDef batch_norm_def() { return {"BatchNormalization", infer_batch_norm, lower_batch_norm, grad_batch_norm,
          {real_attr("epsilon", 0), real_attr("momentum", 0, 1), bool_attr("training_mode")},
          {sbp_rule("batch_norm", [](const Graph&, const Node& n, std::vector<Signature>& out) {
             sbp::batch_rows(n, {true}, false, Signature::Tweak::none, out);
           }),
           per_device_batch("batch_norm_train", [](const Graph& g, const Node& n, std::vector<Signature>& out) {
             train_sbp(g, n, out, false);
           }),
           per_device_batch("batch_norm_train_grad", [](const Graph& g, const Node& n, std::vector<Signature>& out) {
             train_sbp(g, n, out, true);
           }),
           per_device_batch("batch_norm_stats", [](const Graph&, const Node& n, std::vector<Signature>& out) { split_sbp(n, out, false); }),
           per_device_batch("batch_norm_apply", [](const Graph&, const Node& n, std::vector<Signature>& out) { split_sbp(n, out, true); }),
           sbp_rule("batch_norm_stats_update", stats_update_sbp)}}; }

}  // namespace of::compiler
