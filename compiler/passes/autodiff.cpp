// SPDX-License-Identifier: Apache-2.0
// autodiff: with --loss, afterwards the graph ends in the loss (a new output "loss", compared
// against a new input, --label; or, with --loss output, the loss the model computes itself from
// an input of its own, --label); with --gradients or --train it also holds the backward pass:
// every weight the loss depends on has its gradient (Compilation::training.weights), and with
// --gradients each is an output "<weight>.grad". Weights are the float constants kernels read at
// run time. The backward nodes come from each operator's grad rule (compiler/ops/*.cpp), in
// reverse order; gradients of a value read by several nodes are summed. An evaluation plan
// (eval_metrics) ends instead in per-sample metrics and has no backward pass.
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/error.h"
#include "common/ignore_index.h"
#include "common/option_spec.h"
#include "compiler/ops/const_eval.h"
#include "compiler/ops/registry.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/requires_grad.h"
#include "compiler/passes/training_kernels.h"

namespace of::compiler {
namespace {


// Per-label metrics [rows] (rows = batch * per) -> each sample's sum [batch]: an evaluation
// counts samples (a padded last batch leaves its padding out), and divides the sums of the
// samples' losses and hits by the sum of their counted labels.
ValueId per_sample_sum(Graph& g, ValueId v, int64_t batch, const std::string& name) {
  const int64_t per = g.values[size_t(v)].desc.shape[0] / batch;
  const ValueId rows = append_node(g, name + "/rows", "Reshape", "copy", {}, {v}, TensorDesc{{batch, per}, DType::f32});
  Attrs a;
  a.set_ints("axes", {1});
  a.set_int("keepdims", 0);
  a.set_float("divisor", 1.0f);
  return append_node(g, name, "ReduceSum", "reduce_sum", std::move(a), {rows}, TensorDesc{{batch}, DType::f32});
}

// Only the default export (eval mode, constant folding) gives parameters exporter-made names:
// its Transposes of nn.Linear weights and the convolutions BatchNorm was folded into. Training
// those as constants would silently freeze them, so the model is refused unless told.
void check_folded(const Compilation& c, const std::vector<ValueId>& folded) {
  if (folded.empty() || !c.options.folded.empty()) return;
  const Graph& g = c.graph;
  std::vector<std::string> first;
  for (size_t i = 0; i < folded.size() && i < 3; ++i)
    first.push_back(fmt::format("{} {}", g.values[size_t(folded[i])].name, shape_str(g.values[size_t(folded[i])].desc.shape)));
  fail({.file = g.source_file},
       "{} float initializer{} named by the exporter, not the model ({}{}): parameters that torch.onnx.export folded "
       "(eval-mode export with constant folding) would train as constants; export with "
       "training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, or say to train or freeze them",
       folded.size(), folded.size() == 1 ? "" : "s", fmt::join(first, ", "), folded.size() > 3 ? ", ..." : "");
}

// An infinity (a mask buffer's -inf) in a tensor that trains makes every gradient NaN.
void check_finite_weight(const Graph& g, ValueId v) {
  const Value& val = g.values[size_t(v)];
  for (size_t i = 0; i < val.data->size() / 4; ++i) {
    float x;
    std::memcpy(&x, val.data->data() + 4 * i, 4);
    if (!std::isfinite(x))
      fail({.file = g.source_file, .field = "initializer '" + val.name + "'"},
           "holds {} at flat index {} and would train: a buffer (a mask) must not (scripts/of_export.py lists the "
           "parameters; or --freeze it)",
           x, i);
  }
}

bool frozen_by_option(const CompileOptions& o, const std::string& name) {
  for (const std::string& pattern : o.freeze)
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

// Which values want a gradient: the weights and everything computed from them.
std::vector<bool> wanting_gradients(const Graph& g, const std::vector<ValueId>& weights) {
  std::vector<bool> wants(g.values.size(), false);
  for (ValueId w : weights) wants[size_t(w)] = true;
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId v : n.runtime_inputs) any = any || wants[size_t(v)];
    for (ValueId v : n.outputs) wants[size_t(v)] = any;
  }
  return wants;
}

// The backward pass of nodes [0, forward_nodes), in reverse, from the gradients already in
// `grads`; then each weight's gradient goes to c.training.weights and, with --gradients, becomes
// an output "<weight>.grad". `anchor`: a node a weight's gradient copy may be placed after.
void differentiate(Compilation& c, size_t forward_nodes, const std::vector<ValueId>& weights, std::vector<ValueId>& grads,
                   std::vector<bool>& wants, NodeId anchor) {
  Graph& g = c.graph;
  for (auto n = NodeId(forward_nodes) - 1; n >= 0; --n) {
    bool has_grad = false;
    for (ValueId v : g.nodes[size_t(n)].outputs) has_grad = has_grad || grads[size_t(v)] != kNoValue;
    if (!has_grad) continue;
    const Node& node = g.nodes[size_t(n)];
    const OpDef* def = find_op(node.domain, node.op_type);
    OF_ASSERT(def, "forward node without an OpDef: " + node.op_type);
    if (!def->grad)
      fail({.file = g.source_file, .node = node.name, .op = node.op_type}, "no gradient rule for {} yet: this model cannot be trained", node.op_type);
    GradCtx ctx(g, n, grads, wants);
    def->grad(ctx);
  }

  for (ValueId w : weights)
    if (grads[size_t(w)] != kNoValue) c.training.weights.emplace_back(w, grads[size_t(w)]);
  if (!c.options.gradients) return;
  // Each weight's gradient becomes an output; a value that is already an output gets a copy.
  for (auto& [w, dw] : c.training.weights) {
    if (g.values[size_t(dw)].graph_output || g.values[size_t(dw)].producer < 0) {
      GradCtx ctx(g, g.values[size_t(dw)].producer < 0 ? anchor : g.values[size_t(dw)].producer, grads, wants);
      dw = ctx.emit("Identity", "copy", {dw}, {}, g.values[size_t(w)].desc);
    }
    g.values[size_t(dw)].name = g.values[size_t(w)].name + ".grad";
    g.values[size_t(dw)].graph_output = true;
    g.outputs.push_back(dw);
  }
}

// --loss output: the model returns its own loss (F.cross_entropy with weight= or reduction=sum,
// a main loss plus a weighted auxiliary one, a loss written out in tensor ops: whatever scalar
// it computes) from an input of its own that holds the labels (--label). The backward starts at
// that output with 1; an evaluation plan averages it over the batches. A model with several
// outputs (a Hugging Face model's loss and logits) names its loss (--loss output:name=loss); the
// plan keeps only that one.
bool train_own_loss(Compilation& c, const std::vector<ValueId>& weights, const std::string& name) {
  Graph& g = c.graph;
  const CompileOptions& o = c.options;
  const Where file{.file = g.source_file};
  std::vector<std::string> names;
  ValueId loss = g.outputs.size() == 1 && name.empty() ? g.outputs[0] : kNoValue;
  for (ValueId v : g.outputs) {
    names.push_back(g.values[size_t(v)].name);
    if (!name.empty() && names.back() == name) loss = v;
  }
  if (loss == kNoValue && name.empty())
    fail(file, "--loss output: the model has {} outputs ({}): name its loss (--loss output:name=N)", g.outputs.size(), fmt::join(names, ", "));
  if (loss == kNoValue) fail(file, "--loss output: the model has no output '{}' (its outputs: {})", name, fmt::join(names, ", "));
  for (ValueId v : g.outputs) g.values[size_t(v)].graph_output = v == loss;
  g.outputs = {loss};
  const TensorDesc loss_desc = g.values[size_t(loss)].desc;
  if (loss_desc.dtype != DType::f32 || numel(loss_desc.shape) != 1)
    fail(file, "--loss output: the output '{}' is {} {}, not a loss (a float scalar)", g.values[size_t(loss)].name,
         dtype_name(loss_desc.dtype), shape_str(loss_desc.shape));
  bool found = false;
  std::vector<std::string> inputs;
  for (ValueId v : g.inputs) {
    found = found || g.values[size_t(v)].name == o.label;
    inputs.push_back(g.values[size_t(v)].name);
  }
  if (!found)
    fail(file, "--loss output: --label '{}' is not an input of the model (its inputs: {}); name the one that holds the labels", o.label,
         fmt::join(inputs, ", "));
  std::vector<bool> wants = wanting_gradients(g, weights);
  if (!wants[size_t(loss)]) fail(file, "the loss '{}' does not depend on any weight: nothing to train", g.values[size_t(loss)].name);
  if (o.eval_metrics || (!o.gradients && !o.train)) return true;

  const size_t forward_nodes = g.nodes.size();
  const ValueId one = g.add_value("loss/one");
  set_scalar(g.values[size_t(one)], 1.0f);
  g.values[size_t(one)].desc.shape = loss_desc.shape;  // [] or [1]: one element either way
  wants.resize(g.values.size(), false);
  std::vector<ValueId> grads(g.values.size(), kNoValue);
  grads[size_t(loss)] = one;
  differentiate(c, forward_nodes, weights, grads, wants, g.values[size_t(loss)].producer);
  return true;
}

}  // namespace

std::vector<ValueId> trainable_weights(Compilation& c) {
  const Graph& g = c.graph;
  std::vector<bool> seen(g.values.size(), false), state(g.values.size(), false);
  for (const Node& n : g.nodes)
    for (size_t k : n.state_inputs) state[size_t(n.inputs[k])] = true;
  std::vector<ValueId> weights, folded;
  c.training.frozen = c.training.state = 0;
  for (const Node& n : g.nodes)
    for (ValueId v : n.runtime_inputs) {
      const Value& val = g.values[size_t(v)];
      if (seen[size_t(v)] || !val.data || !val.initializer || val.desc.dtype != DType::f32) continue;
      seen[size_t(v)] = true;
      if (state[size_t(v)]) {  // buffers are state, never trained
        ++c.training.state;
        continue;
      }
      if (exporter_named(val.name)) {
        if (numel(val.desc.shape) <= 1) continue;  // a folded scale or epsilon
        folded.push_back(v);
        if (c.options.folded != "train") {
          ++c.training.frozen;
          continue;
        }
      } else if (frozen_by_option(c.options, val.name) || !listed_as_trained(g, val.name)) {
        ++c.training.frozen;  // a buffer or a parameter torch does not train, when the model says so
        continue;
      }
      check_finite_weight(g, v);
      weights.push_back(v);
    }
  // A parameter torch trains that a node reads only when compiling (an attribute-like input taken
  // as a constant) would silently keep its value: refused, naming the node.
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      if (v == kNoValue || seen[size_t(v)] || std::count(n.runtime_inputs.begin(), n.runtime_inputs.end(), v) > 0) continue;
      const Value& val = g.values[size_t(v)];
      if (!val.initializer || val.desc.dtype != DType::f32 || state[size_t(v)] || exporter_named(val.name) ||
          frozen_by_option(c.options, val.name) || !listed_as_trained(g, val.name))
        continue;
      fail({.file = g.source_file, .node = n.name, .op = n.op_type},
           "reads parameter '{}' (input {}) as a constant when compiling, so it could not train as torch trains it; "
           "--freeze {} keeps it at its value", val.name, i, val.name);
    }
  if (c.options.train || c.options.gradients) check_folded(c, folded);
  check_requires_grad_list(g);
  c.training.unsure.clear();
  if (!g.requires_grad)
    for (ValueId v : unsure_parameters(g, weights)) c.training.unsure.push_back(g.values[size_t(v)].name);
  for (const std::string& pattern : c.options.freeze) {
    bool any = false;
    for (const Value& val : g.values) any = any || (val.initializer && fnmatch(pattern.c_str(), val.name.c_str(), 0) == 0);
    if (!any) fail({.file = g.source_file}, "freeze pattern '{}' matches no initializer of the model", pattern);
  }
  return weights;
}

bool Autodiff::run(Compilation& c) {
  const CompileOptions& o = c.options;
  if (o.loss.empty()) {
    if (o.gradients) fail({}, "--gradients needs --loss (cross_entropy, mse, or output: the loss the model returns)");
    if (o.train) fail({}, "--train needs --loss (cross_entropy, mse, or output: the loss the model returns)");
    return false;
  }
  c.training.label = o.label;
  Graph& g = c.graph;
  const Where file{.file = g.source_file};
  mark_padding_rows(g);  // before any Gather's gradient is made
  const OptionSpec loss_spec(o.loss, "--loss");
  if (loss_spec.kind() != "cross_entropy" && loss_spec.kind() != "mse" && loss_spec.kind() != "output")
    fail(file, "--loss '{}' is not supported (cross_entropy[:label_smoothing=E,ignore_index=K], mse, output)", o.loss);
  if (loss_spec.kind() == "output") {
    loss_spec.allow({"name"});
    return train_own_loss(c, trainable_weights(c), loss_spec.text("name", ""));
  }
  const bool xent = loss_spec.kind() == "cross_entropy";
  // torch's F.cross_entropy(..., label_smoothing=E, ignore_index=K): the target mixes in E of a
  // uniform one; labels K count nowhere (torch's default K is the kernels').
  Attrs loss_attrs, metrics_attrs;
  if (xent) {
    loss_spec.allow({"label_smoothing", "ignore_index"});
    const double smoothing = loss_spec.number("label_smoothing", 0, 0, 1);
    if (smoothing > 0) loss_attrs.set_float("label_smoothing", float(smoothing));
    const double ignore = loss_spec.number("ignore_index", double(kDefaultIgnoreIndex), -double(1LL << 53), double(1LL << 53));
    if (ignore != std::floor(ignore)) fail(file, "--loss '{}': ignore_index {} is not an integer", o.loss, ignore);
    if (ignore != double(kDefaultIgnoreIndex)) {
      loss_attrs.set_int("ignore_index", int64_t(ignore));
      metrics_attrs.set_int("ignore_index", int64_t(ignore));
    }
  } else {
    loss_spec.allow({});
  }
  if (g.outputs.size() != 1) fail(file, "--loss needs a model with one output; this one has {}", g.outputs.size());
  for (ValueId v : g.inputs)
    if (g.values[size_t(v)].name == o.label) fail(file, "--label '{}' is already an input of the model", o.label);
  // The label is a new graph input: a name the model already gives a value (an output, a weight,
  // an intermediate) would make two tensors of one name in the plan and its checkpoints.
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (g.values[i].name != o.label) continue;
    const bool output = std::find(g.outputs.begin(), g.outputs.end(), ValueId(i)) != g.outputs.end();
    fail(file, "--label '{}' is already the name of {} in the model; choose another name", o.label,
         g.values[i].initializer ? "a weight" : output ? "its output" : "a value");
  }
  const ValueId pred = g.outputs[0];
  const TensorDesc pred_desc = g.values[size_t(pred)].desc;
  // The samples of a batch, as the plan's job counts them: the first input's rows.
  const int64_t batch = g.inputs.empty() || g.values[size_t(g.inputs[0])].desc.shape.empty() ? 1 : g.values[size_t(g.inputs[0])].desc.shape[0];

  // Weights and everything computed from them want a gradient. A weight is a float initializer
  // read at run time that the model names as a parameter: the exporter's own constants (a
  // Constant node's output "/.../Constant_output_0", a scalar "onnx::Mul_12") are not trained,
  // e.g. an attention mask or scale; nor are buffers (BatchNorm's running statistics, which their
  // op marks as state) or what --freeze names.
  const std::vector<ValueId> weights = trainable_weights(c);
  std::vector<bool> wants = wanting_gradients(g, weights);
  if (!wants[size_t(pred)]) fail(file, "the output '{}' does not depend on any weight: nothing to train", g.values[size_t(pred)].name);

  // The label input. Cross-entropy takes what torch's F.cross_entropy takes: logits [N,C] with
  // class ids [N], or [N,C,d1,...] with class ids [N,d1,...] (a class per pixel: segmentation).
  const ValueId label = g.add_value(o.label);
  Value& lv = g.values[size_t(label)];
  if (xent) {
    if (pred_desc.shape.size() < 2)
      fail(file, "--loss cross_entropy needs logits [N,C] or [N,C,d1,...]; the output '{}' is {}", g.values[size_t(pred)].name,
           shape_str(pred_desc.shape));
    Shape ids = pred_desc.shape;
    ids.erase(ids.begin() + 1);
    lv.desc = TensorDesc{ids, DType::i64};
  } else {
    lv.desc = pred_desc;
  }
  lv.known = true;
  lv.graph_input = true;
  g.inputs.push_back(label);
  g.values[size_t(pred)].graph_output = false;

  // The loss kernels read one row of classes per label: [N,C,d1,...] becomes [N*d1*...,C] (the
  // classes moved last, then rows), its labels [N*d1*...]. These are forward nodes, differentiated
  // by their ops' rules as the model's are.
  ValueId logits = pred, ids = label;
  if (xent && pred_desc.shape.size() > 2) {
    const Shape& s = pred_desc.shape;
    std::vector<int64_t> perm{0};
    Shape moved{s[0]};
    for (size_t a = 2; a < s.size(); ++a) perm.push_back(int64_t(a)), moved.push_back(s[a]);
    perm.push_back(1);
    moved.push_back(s[1]);
    Attrs a;
    a.set_ints("perm", perm);
    const ValueId last = append_node(g, "loss/classes_last", "Transpose", "transpose", std::move(a), {pred}, TensorDesc{moved, DType::f32});
    const int64_t rows = numel(s) / s[1];
    logits = append_node(g, "loss/logits", "Reshape", "copy", {}, {last}, TensorDesc{{rows, s[1]}, DType::f32});
    ids = append_node(g, "loss/labels", "Reshape", "copy", {}, {label}, TensorDesc{{rows}, DType::i64});
    wants.resize(g.values.size(), false);
    wants[size_t(last)] = wants[size_t(logits)] = true;
  }
  const TensorDesc logits_desc = g.values[size_t(logits)].desc;
  const size_t forward_nodes = g.nodes.size();

  const auto loss_node = NodeId(g.nodes.size());
  const ValueId loss = g.add_value("loss");
  g.values[size_t(loss)].desc = TensorDesc{{}, DType::f32};
  g.values[size_t(loss)].known = true;
  g.values[size_t(loss)].producer = loss_node;
  g.values[size_t(loss)].graph_output = true;
  Node ln{.name = "loss", .op_type = xent ? "SoftmaxCrossEntropy" : "MeanSquaredError",
          .inputs = {logits, ids}, .outputs = {loss},
          .kernel = xent ? "softmax_cross_entropy" : "mse_loss", .kernel_attrs = loss_attrs};
  ValueId prob = kNoValue;
  if (xent) {  // the kernel also keeps the softmax for the backward pass
    prob = g.add_value("loss/prob");
    g.values[size_t(prob)].desc = logits_desc;
    g.values[size_t(prob)].known = true;
    g.values[size_t(prob)].producer = loss_node;
    ln.outputs.push_back(prob);
  }
  ln.runtime_inputs = ln.inputs;
  g.values[size_t(logits)].consumers.push_back(loss_node);
  g.values[size_t(ids)].consumers.push_back(loss_node);
  g.nodes.push_back(std::move(ln));
  g.outputs = {loss};
  if (o.eval_metrics && xent) {
    // Per-sample metrics replace the mean loss: a padded last batch must not count its padding.
    // Each sample's loss, hits and counted labels are sums over its labels (a sequence's tokens,
    // an image's pixels; ignored ones count nowhere).
    const int64_t rows = logits_desc.shape[0];
    const ValueId count = g.add_value("loss/counted");
    g.values[size_t(count)].producer = loss_node;
    Node& l = g.nodes[size_t(loss_node)];
    l.op_type = "ClassifyMetrics";
    l.kernel = "classify_metrics";  // the plain cross-entropy of each label, smoothing or not
    l.kernel_attrs = metrics_attrs;
    l.outputs.push_back(count);
    std::vector<ValueId> metrics{loss, prob, count};
    for (ValueId v : metrics) {
      g.values[size_t(v)].desc = TensorDesc{{rows}, DType::f32};
      g.values[size_t(v)].known = true;
    }
    const char* names[] = {"eval/nll", "eval/correct", "eval/count"};
    if (rows != batch) {
      if (batch <= 0 || rows % batch != 0)
        fail(file, "--eval counts samples, but the logits' {} rows are not a whole number of rows per sample of the batch {}", rows,
             batch);
      for (size_t k = 0; k < 3; ++k) {
        g.values[size_t(metrics[k])].name = fmt::format("loss/{}", names[k] + 5);
        metrics[k] = per_sample_sum(g, metrics[k], batch, names[k]);
      }
    }
    g.values[size_t(loss)].graph_output = false;
    for (size_t k = 0; k < 3; ++k) {
      g.values[size_t(metrics[k])].name = names[k];
      g.values[size_t(metrics[k])].graph_output = true;
    }
    g.outputs = metrics;
  }
  if (!o.gradients && !o.train) return true;

  // Backward, from dloss = 1.
  const ValueId one = g.add_value("loss/one");
  set_scalar(g.values[size_t(one)], 1.0f);
  wants.resize(g.values.size(), false);
  std::vector<ValueId> grads(g.values.size(), kNoValue);
  {
    GradCtx ctx(g, loss_node, grads, wants);
    std::vector<ValueId> in = xent ? std::vector<ValueId>{one, prob, ids} : std::vector<ValueId>{one, pred, label};
    grads[size_t(logits)] = ctx.emit("LossGrad", xent ? "softmax_cross_entropy_grad" : "mse_loss_grad", in, loss_attrs, logits_desc);
  }
  differentiate(c, forward_nodes, weights, grads, wants, loss_node);
  return true;
}

// Losses over a split batch: each device's mean over its rows, divided by the parts
// (mean_over_parts), summed (P) is the mean over the whole batch. Metrics are per sample.
std::vector<KernelSbp> loss_kernel_sbp() {
  using T = Signature::Tweak;
  return {
      sbp_rule("classify_metrics", [](const Graph&, const Node& n, std::vector<Signature>& out) {
        sbp::batch_rows(n, {true, true}, false, T::none, out);
      }),
      sbp_rule("mse_loss", [](const Graph&, const Node& n, std::vector<Signature>& out) {
        sbp::batch_rows(n, {true, true}, true, T::mean_over_parts, out);
      }),
      sbp_rule("mse_loss_grad", [](const Graph&, const Node& n, std::vector<Signature>& out) {
        sbp::batch_rows(n, {false, true, true}, false, T::mean_over_parts, out);
      }),
      sbp_rule("softmax_cross_entropy", [](const Graph&, const Node& n, std::vector<Signature>& out) {
        sbp::batch_rows(n, {true, true}, false, T::mean_over_parts, out);
        out.back().out[0] = Sbp::P();  // the mean loss; the probabilities stay split
      }),
      sbp_rule("softmax_cross_entropy_grad", [](const Graph&, const Node& n, std::vector<Signature>& out) {
        sbp::batch_rows(n, {false, true, true}, false, T::mean_over_parts, out);
      }),
  };
}

}  // namespace of::compiler
