// SPDX-License-Identifier: Apache-2.0
// add-optimizer: with --train, afterwards every trained weight has one update node that reads the
// weight, its gradient, its optimizer state (and accumulator) and the step's scalars, and writes
// the weight and state back in place (Node::inplace). The step's scalars are new graph inputs the
// data source fills per piece: "train/lr" and "train/step" (1-based). State tensors are zero
// constants named as PyTorch's optimizers name them ("<weight>.momentum_buffer", ".exp_avg",
// ".exp_avg_sq"), so a checkpoint's optimizer file reads like torch's state. With k micro-batches
// an accumulate node before each update sums k gradients (its register gets one piece per k acts)
// and hands the update their mean with the step's scalars: the update runs once per step, and the
// forward passes of a step's micro-batches all read the same weights without waiting for it.
// Every BatchNorm normalising with batch statistics gets a running-statistics update node too
// (in place on running_mean, running_var and num_batches_tracked, once per piece, as torch
// updates them once per forward call); it is a task of its own so that the forward pass never
// waits for the readers of the running statistics.
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/error.h"
#include "common/lr_schedule.h"
#include "common/option_spec.h"
#include "compiler/passes/clip_grad_norm.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/training_kernels.h"
#include "kernels/batch_norm_calls.h"

namespace of::compiler {
namespace {

struct OptimizerChoice {
  std::string kernel;                    // sgd_update, adam_update, rmsprop_update or adagrad_update
  std::string op_type;                   // the update nodes' (is_optimizer_update knows them)
  std::vector<std::string> state_names;  // suffixes of the state tensors
  Attrs attrs;
  float lr = 0;
};

OptimizerChoice parse_optimizer(const std::string& text) {
  OptionSpec s(text, "--optimizer");
  OptimizerChoice o;
  if (s.kind() == "sgd") {
    s.allow({"lr", "momentum", "dampening", "nesterov", "weight_decay"});
    o.kernel = "sgd_update";
    o.op_type = "SgdUpdate";
    o.attrs.set_float("momentum", float(s.number("momentum", 0, 0, 1)));
    // Without momentum torch keeps no buffer: neither memory nor a checkpoint tensor for it.
    if (o.attrs.get_float("momentum", 0) > 0) o.state_names = {"momentum_buffer"};
    o.attrs.set_float("dampening", float(s.number("dampening", 0, 0, 1)));
    o.attrs.set_int("nesterov", s.flag("nesterov", false) ? 1 : 0);
    o.attrs.set_float("weight_decay", float(s.number("weight_decay", 0, 0, 1e3)));
    if (o.attrs.get_int("nesterov", 0) && (o.attrs.get_float("momentum", 0) <= 0 || o.attrs.get_float("dampening", 0) != 0))
      throw Error(fmt::format("--optimizer '{}': nesterov needs momentum > 0 and dampening 0", text));
  } else if (s.kind() == "adam" || s.kind() == "adamw") {
    s.allow({"lr", "beta1", "beta2", "eps", "weight_decay", "amsgrad"});
    o.kernel = "adam_update";
    o.op_type = "AdamUpdate";
    o.state_names = {"exp_avg", "exp_avg_sq"};
    if (s.flag("amsgrad", false)) {  // torch keeps the largest exp_avg_sq as max_exp_avg_sq
      o.attrs.set_int("amsgrad", 1);
      o.state_names.push_back("max_exp_avg_sq");
    }
    o.attrs.set_float("beta1", float(s.number("beta1", 0.9, 0, 0.999999)));
    o.attrs.set_float("beta2", float(s.number("beta2", 0.999, 0, 0.999999)));
    o.attrs.set_float("eps", float(s.number("eps", 1e-8, 0, 1)));
    // torch's defaults: Adam none, AdamW 0.01 (decoupled).
    o.attrs.set_float("weight_decay", float(s.number("weight_decay", s.kind() == "adamw" ? 0.01 : 0.0, 0, 1e3)));
    o.attrs.set_int("decoupled", s.kind() == "adamw" ? 1 : 0);
  } else if (s.kind() == "rmsprop") {
    // torch.optim.RMSprop's keys and defaults; its state: square_avg, momentum_buffer when
    // momentum > 0, grad_avg when centered.
    s.allow({"lr", "alpha", "eps", "weight_decay", "momentum", "centered"});
    o.kernel = "rmsprop_update";
    o.op_type = "RmspropUpdate";
    o.attrs.set_float("alpha", float(s.number("alpha", 0.99, 0, 1)));
    o.attrs.set_float("eps", float(s.number("eps", 1e-8, 0, 1)));
    o.attrs.set_float("weight_decay", float(s.number("weight_decay", 0, 0, 1e3)));
    o.attrs.set_float("momentum", float(s.number("momentum", 0, 0, 1)));
    o.attrs.set_int("centered", s.flag("centered", false) ? 1 : 0);
    o.state_names = {"square_avg"};
    if (o.attrs.get_float("momentum", 0) > 0) o.state_names.push_back("momentum_buffer");
    if (o.attrs.get_int("centered", 0)) o.state_names.push_back("grad_avg");
  } else if (s.kind() == "adagrad") {
    // torch.optim.Adagrad with initial_accumulator_value=0 (state starts as zeros here).
    s.allow({"lr", "lr_decay", "weight_decay", "eps"});
    o.kernel = "adagrad_update";
    o.op_type = "AdagradUpdate";
    o.attrs.set_float("lr_decay", float(s.number("lr_decay", 0, 0, 1e6)));
    o.attrs.set_float("weight_decay", float(s.number("weight_decay", 0, 0, 1e3)));
    o.attrs.set_float("eps", float(s.number("eps", 1e-10, 0, 1)));
    o.state_names = {"sum"};
  } else {
    throw Error(fmt::format("--optimizer '{}': unknown optimizer '{}' (sgd, adam, adamw, rmsprop, adagrad)", text, s.kind()));
  }
  const bool rate_001 = s.kind() == "sgd" || s.kind() == "rmsprop" || s.kind() == "adagrad";  // torch's default lr
  o.lr = float(s.number("lr", rate_001 ? 0.01 : 0.001, 0, 1e6));
  return o;
}

// Which trained weights (c.training.weights' order) get the optimizer's weight_decay: all but
// those --no-weight-decay names and, with --no-weight-decay-1d, those of fewer than 2 dimensions
// (a torch param group with weight_decay=0). A pattern that names no trained weight is refused.
std::vector<bool> decayed(const Compilation& c) {
  const Graph& g = c.graph;
  const CompileOptions& o = c.options;
  std::vector<bool> decays;
  for (const auto& [w, dw] : c.training.weights) {
    const Value& v = g.values[size_t(w)];
    bool out = o.no_weight_decay_1d && v.desc.shape.size() < 2;
    for (const std::string& pattern : o.no_weight_decay) out = out || fnmatch(pattern.c_str(), v.name.c_str(), 0) == 0;
    decays.push_back(!out);
  }
  for (const std::string& pattern : o.no_weight_decay) {
    bool any = false;
    for (const auto& [w, dw] : c.training.weights) any = any || fnmatch(pattern.c_str(), g.values[size_t(w)].name.c_str(), 0) == 0;
    if (!any) fail({.file = g.source_file}, "--no-weight-decay pattern '{}' matches no trained tensor of the model", pattern);
  }
  return decays;
}

// Each trained weight's learning rate as a multiple of the optimizer's (c.training.weights'
// order): LR / lr for the first --param-lr GLOB=LR its name matches, else 1. A pattern that
// names no trained weight, or a rate that is not a number >= 0, is refused.
std::vector<double> lr_factors(const Compilation& c, double base_lr) {
  const Graph& g = c.graph;
  std::vector<std::pair<std::string, double>> groups;
  for (const std::string& spec : c.options.param_lr) {
    const size_t eq = spec.rfind('=');
    char* end = nullptr;
    const double lr = eq == std::string::npos ? -1 : std::strtod(spec.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == spec.c_str() + eq + 1 || *end != '\0' || !std::isfinite(lr) || lr < 0 || lr > 1e6)
      fail({.field = "--param-lr"}, "'{}' is not GLOB=LR with a learning rate in [0, 1e6]", spec);
    if (base_lr <= 0) fail({.field = "--param-lr"}, "'{}' needs the optimizer's lr above 0 (a group's rate is a multiple of it)", spec);
    groups.emplace_back(spec.substr(0, eq), lr);
  }
  std::vector<double> factors;
  for (const auto& [w, dw] : c.training.weights) {
    double f = 1;
    for (size_t k = 0; k < groups.size(); ++k)
      if (fnmatch(groups[k].first.c_str(), g.values[size_t(w)].name.c_str(), 0) == 0) {
        f = groups[k].second / base_lr;
        break;
      }
    factors.push_back(f);
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    bool any = false;  // matched by a weight an earlier pattern took counts: it names a trained tensor
    for (const auto& [w, dw] : c.training.weights) any = any || fnmatch(groups[k].first.c_str(), g.values[size_t(w)].name.c_str(), 0) == 0;
    if (!any) fail({.file = g.source_file}, "--param-lr pattern '{}' matches no trained tensor of the model", groups[k].first);
  }
  return factors;
}

ValueId add_scalar_input(Graph& g, const std::string& name) {
  for (ValueId v : g.inputs)
    if (g.values[size_t(v)].name == name) fail({.file = g.source_file}, "the model already has an input named '{}'", name);
  const ValueId v = g.add_value(name);
  g.values[size_t(v)].desc = TensorDesc{{}, DType::f32};
  g.values[size_t(v)].known = true;
  g.values[size_t(v)].graph_input = true;
  g.inputs.push_back(v);
  return v;
}

ValueId add_zeros(Graph& g, const std::string& name, const TensorDesc& desc) {
  const ValueId v = g.add_value(name);
  Value& val = g.values[size_t(v)];
  val.desc = desc;
  val.known = true;
  val.data = std::vector<uint8_t>(size_t(desc.bytes()), 0);
  return v;
}

// Optimizer state: zeros the runtime writes at the start of a run, never stored in the weights
// file, so the compiler holds no bytes for it (Adam's two moments would double ofc's memory).
ValueId add_optimizer_state(Graph& g, const std::string& name, const TensorDesc& desc) {
  const ValueId v = g.add_value(name);
  Value& val = g.values[size_t(v)];
  val.desc = desc;
  val.known = true;
  val.data = std::vector<uint8_t>();
  val.optimizer_state = true;
  return v;
}

// Whether every reader of `s` is a BatchNormalization over this pair of running statistics: the
// calls of one module.
bool read_by_batch_norms_only(const Graph& g, ValueId s, ValueId rm, ValueId rv) {
  for (NodeId r : g.values[size_t(s)].consumers) {
    const Node& n = g.nodes[size_t(r)];
    if (n.op_type != "BatchNormalization" || n.inputs.size() < 5 || n.inputs[3] != rm || n.inputs[4] != rv) return false;
  }
  return true;
}

// The running-statistics update after the batch_norm_train nodes of one BatchNorm module (see the
// file comment), `calls` in call order: a module called k times in a forward (a Siamese encoder
// on two views, as SimSiam, BYOL and SimCLR train) blends each call's statistics in turn and
// counts k batches, as torch's k forward calls do. None for a BatchNorm with
// track_running_stats=False: torch keeps no running statistics, and the export feeds the node
// the batch's own mean and variance, computed (no initializers) for eval mode.
void add_batch_norm_update(Compilation& c, const std::vector<NodeId>& calls) {
  Graph& g = c.graph;
  const NodeId last = calls.back();
  const Node& fwd = g.nodes[size_t(last)];
  const Where where{.file = g.source_file, .node = fwd.name, .op = fwd.op_type};
  const ValueId rm = fwd.inputs[3], rv = fwd.inputs[4];
  if (g.values[size_t(rm)].producer >= 0 && g.values[size_t(rv)].producer >= 0) return;
  const std::string rm_name = g.values[size_t(rm)].name;  // a copy: add_zeros below grows g.values
  const std::string suffix = "running_mean";
  // torch keeps num_batches_tracked beside running_mean; the export does not carry it.
  const std::string prefix = rm_name.size() >= suffix.size() && rm_name.compare(rm_name.size() - suffix.size(), suffix.size(), suffix) == 0
                                 ? rm_name.substr(0, rm_name.size() - suffix.size())
                                 : rm_name + ".";
  ValueId tracked = kNoValue;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == prefix + "num_batches_tracked") tracked = ValueId(v);
  if (tracked == kNoValue) {
    tracked = add_zeros(g, prefix + "num_batches_tracked", TensorDesc{{}, DType::i64});
    g.values[size_t(tracked)].initializer = true;  // a buffer of the model, as torch names it
  } else if (const Value& t = g.values[size_t(tracked)];
             !t.data || t.desc.dtype != DType::i64 || numel(t.desc.shape) != 1 || t.producer >= 0) {
    fail(where, "'{}' exists but is not an i64 scalar initializer (torch's num_batches_tracked)", t.name);
  }
  for (ValueId s : {rm, rv})
    if (!g.values[size_t(s)].data || !read_by_batch_norms_only(g, s, rm, rv))
      fail(where, "running statistic '{}' must be an initializer only the calls of this BatchNorm use", g.values[size_t(s)].name);
  if (int64_t(calls.size()) > kernels::kMaxBatchNormCalls)
    fail(where, "the BatchNorm of '{}' is called {} times in one step; at most {} calls are supported", rm_name, calls.size(),
         kernels::kMaxBatchNormCalls);
  const float momentum = fwd.kernel_attrs.get_float("momentum", 0.1f);
  Node n{.name = "update/" + fwd.name + "/running_stats", .op_type = "BatchNormStatsUpdate", .kernel = "batch_norm_stats_update"};
  for (NodeId call : calls) {
    const Node& f = g.nodes[size_t(call)];
    if (f.kernel_attrs.get_float("momentum", 0.1f) != momentum)
      fail({.file = g.source_file, .node = f.name, .op = f.op_type}, "momentum {} differs from {} of the other calls of the BatchNorm of '{}'",
           f.kernel_attrs.get_float("momentum", 0.1f), momentum, rm_name);
    n.inputs.push_back(f.outputs[1]);  // the batch mean
    n.inputs.push_back(f.outputs[3]);  // the batch's unbiased variance
  }
  const auto first_state = int32_t(n.inputs.size());
  for (ValueId v : {rm, rv, tracked}) n.inputs.push_back(v);
  n.runtime_inputs = n.inputs;
  n.kernel_attrs.set_float("momentum", momentum);
  const std::vector<std::string>& cumulative = g.cumulative_batch_norms;
  if (std::binary_search(cumulative.begin(), cumulative.end(), rm_name))
    n.kernel_attrs.set_int("cumulative", 1);  // momentum=None: the average of every batch so far
  else if (!g.requires_grad && momentum == 1.0f)
    c.training.momentum_one.push_back(rm_name);
  const auto id = NodeId(g.nodes.size());
  n.forward = last;  // joins the forward nodes' stage and devices
  n.state_per_piece = true;
  for (int32_t k = first_state; k < first_state + 3; ++k) {
    const ValueId in = n.inputs[size_t(k)];
    const ValueId out = g.add_value(g.values[size_t(in)].name + "'");
    g.values[size_t(out)].desc = g.values[size_t(in)].desc;
    g.values[size_t(out)].known = true;
    g.values[size_t(out)].producer = id;
    n.outputs.push_back(out);
    n.inplace.push_back(k);
  }
  for (ValueId v : n.inputs) g.values[size_t(v)].consumers.push_back(id);
  g.nodes.push_back(std::move(n));
  c.training.state += 3;
}

// Each update (and its accumulate) goes right after the last node it waits for within a step:
// the producers of what it reads and the other readers of the weight and state it overwrites
// (they read the version before it). Lowered, that is its task's place in its device's order, so
// share-memory's order edges let a gradient's bytes go once its update has run, in the middle of
// the backward pass; at the end of the node list every gradient would be live at once until the
// last layer's (as in PyTorch, whose step follows the whole backward pass). Results are the same
// bits: an update still waits for every reader of the version it replaces.
void place_updates_early(Graph& g, NodeId first_new) {
  const auto count = NodeId(g.nodes.size());
  // Each new node follows the latest old node it waits for, directly or through the new nodes it
  // reads (a clipped gradient waits for every gradient's square sum, each placed after its own
  // gradient); new nodes following the same old one keep their (topological) order.
  std::vector<NodeId> old_anchor(size_t(count - first_new), -1);
  std::vector<std::vector<NodeId>> after(size_t(first_new) + 1);  // [0]: before every old node
  for (NodeId m = first_new; m < count; ++m) {
    const Node& node = g.nodes[size_t(m)];
    NodeId anchor = -1;
    auto wait_for = [&](NodeId p) {
      OF_ASSERT(p < m, "an update waits for a node made after it: " + node.name);
      if (p >= 0) anchor = std::max(anchor, p >= first_new ? old_anchor[size_t(p - first_new)] : p);
    };
    for (ValueId v : node.inputs) wait_for(g.values[size_t(v)].producer);
    for (int32_t k : node.inplace)
      for (NodeId r : g.values[size_t(node.inputs[size_t(k)])].consumers)
        if (r != m) wait_for(r);
    old_anchor[size_t(m - first_new)] = anchor;
    after[size_t(anchor + 1)].push_back(m);
  }
  std::vector<NodeId> order(after[0]);
  order.reserve(size_t(count));
  for (NodeId n = 0; n < first_new; ++n) {
    order.push_back(n);
    order.insert(order.end(), after[size_t(n + 1)].begin(), after[size_t(n + 1)].end());
  }
  reorder_nodes(g, order);
}

}  // namespace

bool AddOptimizer::run(Compilation& c) {
  const CompileOptions& o = c.options;
  if (!o.train) {
    if (o.micro_batches != 1) fail({}, "--micro-batches needs --train");
    return false;
  }
  if (o.micro_batches < 1) fail({}, "--micro-batches must be at least 1, got {}", o.micro_batches);
  // Each micro-batch is one whole batch of the model (a step sums k of them), so k never has to
  // divide the batch; the bound keeps a step and check-plan's play of it (2k pieces) finite.
  if (o.micro_batches > kMaxMicroBatches)
    fail({.field = "--micro-batches"}, "{} is outside [1, {}] (each is a whole batch of the model; a step sums them)",
         o.micro_batches, kMaxMicroBatches);
  Graph& g = c.graph;
  const OptimizerChoice opt = parse_optimizer(o.optimizer);
  LrSchedule::parse(o.schedule, opt.lr);  // fails now rather than at run time
  c.training.lr = opt.lr;
  if (c.training.weights.empty()) fail({.file = g.source_file}, "--train: no weight of the model gets a gradient from the loss");

  const auto first_update = NodeId(g.nodes.size());
  const ValueId lr = add_scalar_input(g, "train/lr");
  const ValueId step = add_scalar_input(g, "train/step");
  const std::vector<bool> decays = decayed(c);
  const std::vector<double> lr_factor = lr_factors(c, opt.lr);

  // Each weight's gradient for a step (with micro-batches, their mean) and the step's scalars.
  const size_t count = c.training.weights.size();
  std::vector<ValueId> weights(count), grads(count), step_lrs(count, lr), step_nos(count, step);
  for (size_t i = 0; i < count; ++i) {
    const auto [w, dw] = c.training.weights[i];
    const std::string wname = g.values[size_t(w)].name;
    weights[i] = w;
    ValueId& grad = grads[i];
    ValueId& step_lr = step_lrs[i];
    ValueId& step_no = step_nos[i];
    grad = dw;
    if (o.micro_batches > 1) {
      const auto acc_id = NodeId(g.nodes.size());
      Node acc{.name = "accumulate/" + wname, .op_type = "Accumulate", .inputs = {dw, lr, step}, .kernel = "accumulate",
               .kernel_attrs = {}, .runtime_inputs = {dw, lr, step}};
      acc.kernel_attrs.set_int("micro_batches", o.micro_batches);
      acc.forward = g.values[size_t(dw)].producer;  // joins the backward pass's stage
      acc.slots = 1;  // the update reads the mean before the next step's first micro-batch lands
      for (const char* suffix : {".grad_mean", "/lr", "/step"}) {
        const ValueId out = g.add_value("accumulate/" + wname + suffix);
        const ValueId from = acc.inputs[acc.outputs.size()];
        g.values[size_t(out)].desc = g.values[size_t(from)].desc;
        g.values[size_t(out)].known = true;
        g.values[size_t(out)].producer = acc_id;
        acc.outputs.push_back(out);
      }
      for (ValueId v : acc.inputs) g.values[size_t(v)].consumers.push_back(acc_id);
      grad = acc.outputs[0];
      step_lr = acc.outputs[1];
      step_no = acc.outputs[2];
      g.nodes.push_back(std::move(acc));
    }
    // Without micro-batches a weight's gradient is consumed by its update before the next one
    // can exist (the next forward pass waits for the updated weight): one slot is enough.
    if (o.micro_batches == 1 && g.values[size_t(dw)].producer >= 0) g.nodes[size_t(g.values[size_t(dw)].producer)].slots = 1;
  }
  if (o.clip_grad_norm > 0 && o.clip_grad_value > 0)
    fail({.field = "--clip-grad-value"}, "and --clip-grad-norm together: which comes first is the training script's choice; give one");
  if (o.clip_grad_norm > 0) grads = clip_grad_norm(g, weights, grads, o.clip_grad_norm);
  if (o.clip_grad_value > 0) grads = clip_grad_value(g, weights, grads, o.clip_grad_value);
  // A param group's rate: the step's (scheduled) lr times the group's multiple, once per step
  // beside the gradient it updates with.
  for (size_t i = 0; i < count; ++i) {
    if (lr_factor[i] == 1.0) continue;
    const std::string& wname = g.values[size_t(weights[i])].name;
    const ValueId factor = g.add_value("param_lr/" + wname + "/factor");
    set_scalar(g.values[size_t(factor)], float(lr_factor[i]));
    const NodeId by = g.values[size_t(grads[i])].producer;
    step_lrs[i] = append_node(g, "param_lr/" + wname, "Mul", "mul", {}, {step_lrs[i], factor}, TensorDesc{{}, DType::f32});
    Node& n = g.nodes.back();
    n.forward = by < 0 ? -1 : (g.nodes[size_t(by)].forward >= 0 ? g.nodes[size_t(by)].forward : by);  // the gradient's stage and devices
    n.slots = 1;  // once per optimizer step
  }

  for (size_t i = 0; i < count; ++i) {
    const ValueId w = weights[i], grad = grads[i];
    const std::string wname = g.values[size_t(w)].name;
    const TensorDesc desc = g.values[size_t(w)].desc;
    Attrs attrs = opt.attrs;
    if (!decays[i]) attrs.set_float("weight_decay", 0.0f);
    std::vector<ValueId> inputs{w, grad};
    for (const std::string& s : opt.state_names) {
      inputs.push_back(add_optimizer_state(g, wname + "." + s, desc));
    }
    const size_t tensors = inputs.size();
    inputs.push_back(step_lrs[i]);
    inputs.push_back(step_nos[i]);

    const auto id = NodeId(g.nodes.size());
    Node n{.name = "update/" + wname, .op_type = opt.op_type,
           .inputs = inputs, .kernel = opt.kernel, .kernel_attrs = attrs, .runtime_inputs = inputs};
    // Outputs: the weight, then each state tensor, written over the input they came from.
    for (size_t k = 0; k < tensors; ++k) {
      if (k == 1) continue;  // the gradient is read, not written
      const ValueId out = g.add_value(g.values[size_t(inputs[k])].name + "'");
      g.values[size_t(out)].desc = desc;
      g.values[size_t(out)].known = true;
      g.values[size_t(out)].producer = id;
      n.outputs.push_back(out);
      n.inplace.push_back(int32_t(k));
    }
    for (ValueId v : inputs) g.values[size_t(v)].consumers.push_back(id);
    g.nodes.push_back(std::move(n));
  }
  place_updates_early(g, first_update);
  const size_t before = g.nodes.size();
  std::vector<std::string> running_means;
  c.training.momentum_one.clear();
  std::vector<std::vector<NodeId>> modules;  // the batch_norm_train calls of each module, in call order
  std::map<ValueId, size_t> module_of;        // by running_mean
  for (size_t n = 0; n < before; ++n)         // the forward's topological order: torch's call order
    if (g.nodes[n].kernel == "batch_norm_train") {
      const auto [it, added] = module_of.emplace(g.nodes[n].inputs[3], modules.size());
      if (added) {
        modules.emplace_back();
        running_means.push_back(g.values[size_t(g.nodes[n].inputs[3])].name);
      }
      modules[it->second].push_back(NodeId(n));
    }
  for (const std::vector<NodeId>& calls : modules) add_batch_norm_update(c, calls);
  std::sort(running_means.begin(), running_means.end());
  for (const std::string& name : g.cumulative_batch_norms)
    if (!std::binary_search(running_means.begin(), running_means.end(), name))
      fail({.file = g.source_file, .field = "metadata 'of.batch_norm_cumulative'"},
           "names '{}', which no training BatchNormalization reads as its running mean (a list written for another model?)", name);
  return true;
}

bool is_optimizer_update(const std::string& op_type) {
  return op_type == "SgdUpdate" || op_type == "AdamUpdate" || op_type == "RmspropUpdate" || op_type == "AdagradUpdate";
}

std::vector<KernelSbp> optimizer_kernel_sbp() {
  return {
      // Linear in the gradient: partial sums are summed as they come and reduced once per step.
      sbp_rule("accumulate", [](const Graph& g, const Node& n, std::vector<Signature>& out) {
        const Shape& g0 = sbp::shape_of(g, n.inputs[0]);
        for (size_t a = 0; a < g0.size(); ++a)
          if (g0[a] > 1)
            out.push_back(Signature{{Sbp::S(int64_t(a)), Sbp::B(), Sbp::B()}, {Sbp::S(int64_t(a)), Sbp::B(), Sbp::B()},
                                    Signature::Tweak::none, true});
        out.push_back(Signature{{Sbp::P(), Sbp::B(), Sbp::B()}, {Sbp::P(), Sbp::B(), Sbp::B()}, Signature::Tweak::none, true});
      }),
      sbp_rule("adagrad_update", sbp::update),
      sbp_rule("adam_update", sbp::update),
      sbp_rule("rmsprop_update", sbp::update),
      // ZeRO 1/2 write a gathered weight into its replica (parallelize.cpp): target and value alike.
      sbp_rule("assign", sbp::update),
      sbp_rule("sgd_update", sbp::update),
  };
}

}  // namespace of::compiler
