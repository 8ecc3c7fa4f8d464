// SPDX-License-Identifier: Apache-2.0
// SoftmaxCrossEntropyLoss (opset 12+): what torch exports for F.cross_entropy — and for
// F.nll_loss of F.log_softmax, which the exporter fuses into it — inside a model that computes
// its own loss (ofc --loss output): scores [N,C] or [N,C,d1,...], labels int64 [N] or
// [N,d1,...] or class probabilities f32 of the scores' shape (written as the ops they are),
// optional class weights [C] (weight=), ignore_index, reduction mean or sum.
// torch's reduction='none' (a loss per label) and the optional log_prob output are refused.
// A composite: the classes moved last and made rows, as the loss that --loss cross_entropy
// appends (compiler/passes/autodiff.cpp) does, then of.SoftmaxCrossEntropy, whose kernel
// keeps the softmax for its gradient.
// NegativeLogLikelihoodLoss, what torch exports for F.nll_loss of anything but a log_softmax
// (torch.log(probs), a model ending in Softmax): the same inputs over log-probabilities, written
// as the ops it is — a one-hot mask of the labels (Equal against the class ids), times the class
// weights, picks -log p; a mean divides by the mask's sum — so that their rules differentiate it.
// (Its mean over a split batch is the whole batch's weighted mean; of.SoftmaxCrossEntropy's, as
// DDP's ranks', is the mean of each device's.)
#include <string>
#include <utility>
#include <vector>

#include "common/ignore_index.h"
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

// reduction as the kernels take it: 1 sums, 0 averages (fails for 'none' or anything else).
int64_t sums(const Attrs& a) { return a.get_str("reduction", "mean") == "sum" ? 1 : 0; }  // once checked

int64_t sums(const OpCtx& c) {
  const std::string r = c.attrs().get_str("reduction", "mean");
  if (r == "mean") return 0;
  if (r == "sum") return 1;
  if (r == "none") c.fail("reduction 'none' (a loss per label) is not supported; reduce it in the model (mean or sum)");
  c.fail("reduction '{}' is not mean, sum or none", r);
}

// torch's F.cross_entropy with class probabilities as its target (mixup's and cutmix's soft
// labels, a teacher's distribution): labels f32 of the scores' shape, which torch exports as
// SoftmaxCrossEntropyLoss as it does class ids (ONNX's own spec wants ids).
bool probability_targets(const OpCtx& c) {
  return c.node().op_type == "SoftmaxCrossEntropyLoss" && c.in(1).dtype == DType::f32;
}

void expect_labels(const OpCtx& c, const Shape& scores) {
  Shape want = scores;
  if (probability_targets(c)) {
    if (c.in(1).shape != want)
      c.fail("input 1 (class probabilities) is {}, expected {} as the scores", shape_str(c.in(1).shape), shape_str(want));
  } else {
    if (c.in(1).dtype != DType::i64)
      c.fail("input 1 (labels) has dtype {}, expected int64 (class ids) or, for SoftmaxCrossEntropyLoss, f32 class probabilities",
             dtype_name(c.in(1).dtype));
    want.erase(want.begin() + 1);
    if (c.in(1).shape != want)
      c.fail("input 1 (labels) is {}, expected {} for scores {}", shape_str(c.in(1).shape), shape_str(want), shape_str(scores));
  }
  if (c.has_in(2)) {
    c.expect_float(2);
    if (c.in(2).shape != Shape{scores[1]})
      c.fail("input 2 (class weights) is {}, expected [{}]", shape_str(c.in(2).shape), scores[1]);
  }
}

void infer_softmax_cross_entropy_loss(OpCtx& c) {
  c.expect_arity(2, 3, 2);
  c.expect_float(0);
  const Shape scores = c.in(0).shape;
  if (scores.size() < 2) c.fail("input 0 (scores) is {}: expected [N,C] or [N,C,d1,...]", shape_str(scores));
  expect_labels(c, scores);
  if (c.num_outputs() > 1 && !c.drop_output_if_unused(1))
    c.fail("its second output (log_prob) is read by the model: only the loss is supported");
  sums(c);
  c.out(0) = TensorDesc{{}, DType::f32};
}


// A tensor shaped as the scores, [N,C,d1,...], as rows: [N,d1,...,C] -> [N*d1*...,C]; [N,C] as it is.
ValueId as_class_rows(ExpandCtx& c, ValueId v) {
  const Shape s = c.shape(c.input(0));
  if (s.size() <= 2) return v;
  std::vector<int64_t> perm{0};
  for (size_t a = 2; a < s.size(); ++a) perm.push_back(int64_t(a));
  perm.push_back(1);
  Attrs t;
  t.set_ints("perm", perm);
  return c.emit("Reshape", {c.emit("Transpose", {v}, std::move(t)), c.ints({numel(s) / s[1], s[1]})});
}

// The composite's scores and labels as rows: scores [N*d1*...,C], labels [N*d1*...] (class ids)
// or [N*d1*...,C] (class probabilities); [N,C] and [N] as they are.
std::pair<ValueId, ValueId> class_rows(ExpandCtx& c) {
  const Shape s = c.shape(c.input(0));
  ValueId labels = c.input(1);
  if (c.shape(labels).size() == s.size()) labels = as_class_rows(c, labels);
  else if (s.size() > 2) labels = c.emit("Reshape", {labels, c.ints({numel(s) / s[1]})});
  return {as_class_rows(c, c.input(0)), labels};
}

bool has_weights(const ExpandCtx& c) { return c.node().inputs.size() > 2 && c.node().inputs[2] != kNoValue; }

// Class probabilities: -sum(p * log_softmax(x)) (times the class weights), divided by the rows
// for mean, as torch's cross_entropy with probability targets (no ignore_index: it names a class id).
void expand_probability_cross_entropy(ExpandCtx& c, ValueId scores, ValueId probabilities) {
  Attrs last;
  last.set_int("axis", 1);
  ValueId terms = c.emit("Mul", {probabilities, c.emit("LogSoftmax", {scores}, std::move(last))});
  if (has_weights(c)) {
    terms = c.emit("Mul", {terms, c.input(2)});
    c.untrained_input(1);  // the class weights are the criterion's data, as torch's weight=
  }
  Attrs all;
  all.set_int("keepdims", 0);
  const ValueId loss = c.emit("Neg", {c.emit("ReduceSum", {terms, c.ints({0, 1})}, std::move(all))});
  if (sums(c.attrs()) != 0) {
    c.emit("Identity", {loss}, {}, c.output(0));
    return;
  }
  c.emit("Div", {loss, c.floats({}, {float(c.shape(scores)[0])})}, {}, c.output(0));
}

void expand_softmax_cross_entropy_loss(ExpandCtx& c) {
  const auto [scores, labels] = class_rows(c);
  if (c.shape(labels).size() == 2) {
    expand_probability_cross_entropy(c, scores, labels);
    return;
  }
  std::vector<ValueId> in{scores, labels};
  if (has_weights(c)) in.push_back(c.input(2));
  Attrs a;
  a.set_int("ignore_index", c.attrs().get_int("ignore_index", kDefaultIgnoreIndex));
  a.set_str("reduction", c.attrs().get_str("reduction", "mean"));
  c.emit("of.SoftmaxCrossEntropy", std::move(in), std::move(a), c.output(0));
}

void expand_negative_log_likelihood_loss(ExpandCtx& c) {
  const auto [logp, labels] = class_rows(c);
  const Shape rows = c.shape(logp);
  std::vector<int64_t> ids(static_cast<size_t>(rows[1]));
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = int64_t(k);
  const ValueId column = c.emit("Reshape", {labels, c.ints({rows[0], 1})});
  ValueId hit = c.emit("Equal", {column, c.ints(ids)});  // [R,C]: the one-hot of each row's label
  // ONNX's ignore_index is optional (torch always writes it); a label outside [0,C) hits nothing.
  if (c.attrs().has("ignore_index")) {
    const int64_t ignore = c.attrs().get_int("ignore_index", kDefaultIgnoreIndex);
    if (ignore >= 0 && ignore < rows[1]) hit = c.emit("And", {hit, c.emit("Not", {c.emit("Equal", {column, c.ints({ignore})})})});
  }
  Attrs f32;
  f32.set_int("to", 1);  // ONNX FLOAT
  ValueId mask = c.emit("Cast", {hit}, std::move(f32));
  if (has_weights(c)) {
    mask = c.emit("Mul", {mask, c.input(2)});
    c.untrained_input(1);  // the class weights are the criterion's data, as torch's weight=
  }
  Attrs all;
  all.set_int("keepdims", 0);
  const ValueId picked = c.emit("ReduceSum", {c.emit("Mul", {mask, logp}), c.ints({0, 1})}, all);
  if (sums(c.attrs()) != 0) {
    c.emit("Neg", {picked}, {}, c.output(0));
    return;
  }
  c.emit("Div", {c.emit("Neg", {picked}), c.emit("ReduceSum", {mask, c.ints({0, 1})}, all)}, {}, c.output(0));
}

// of.SoftmaxCrossEntropy(scores [R,C], labels [R], weights [C]?) -> loss []; lowering adds the
// softmax [R,C] as a second output, which the gradient reads.
void infer_softmax_cross_entropy(OpCtx& c) {
  c.expect_arity(2, 3, 1);
  c.expect_float(0);
  if (c.in(0).shape.size() != 2) c.fail("input 0 (scores) is {}: expected [rows, classes]", shape_str(c.in(0).shape));
  expect_labels(c, c.in(0).shape);
  sums(c);
  c.out(0) = TensorDesc{{}, DType::f32};
}

Attrs kernel_attrs(const OpCtx& c) {
  Attrs a;
  const int64_t ignore = c.attrs().get_int("ignore_index", kDefaultIgnoreIndex);
  if (ignore != kDefaultIgnoreIndex) a.set_int("ignore_index", ignore);
  if (sums(c)) a.set_int("sum", 1);
  return a;
}

void lower_softmax_cross_entropy(OpCtx& c) {
  const TensorDesc prob = c.in(0);
  c.set_kernel("softmax_cross_entropy", kernel_attrs(c));
  if (c.has_in(2)) c.node().state_inputs = {2};  // the class weights: the criterion's data, never trained
  c.add_output("prob", prob);
}

// d scores = the kernel's gradient (weights and labels get none: they are data).
void grad_softmax_cross_entropy(GradCtx& g) {
  if (!g.wants(0)) return;
  std::vector<ValueId> in{g.out_grad(0), g.out(1), g.in(1)};
  if (g.node().inputs.size() > 2) in.push_back(g.in(2));
  g.add_in_grad(0, g.emit("SoftmaxCrossEntropyGrad", "softmax_cross_entropy_grad", std::move(in), g.attrs(), g.desc(g.in(0))));
}

}  // namespace

OpDef negative_log_likelihood_loss_def() {
  OpDef d{"NegativeLogLikelihoodLoss", infer_softmax_cross_entropy_loss, lower_composite};
  d.attrs = {int_attr("ignore_index", -kMaxInt, kMaxInt)};
  d.expand = expand_negative_log_likelihood_loss;
  return d;
}

OpDef softmax_cross_entropy_loss_def() {
  OpDef d{"SoftmaxCrossEntropyLoss", infer_softmax_cross_entropy_loss, lower_composite};
  d.attrs = {int_attr("ignore_index", -kMaxInt, kMaxInt)};
  d.expand = expand_softmax_cross_entropy_loss;
  return d;
}

// Its kernels' SBP rules are the appended loss's (training_kernels.h).
OpDef softmax_cross_entropy_def() {
  return {"of.SoftmaxCrossEntropy", infer_softmax_cross_entropy, lower_softmax_cross_entropy, grad_softmax_cross_entropy,
          {int_attr("ignore_index", -kMaxInt, kMaxInt)}};
}

}  // namespace of::compiler
