// SPDX-License-Identifier: Apache-2.0
// Fills in the plan's header fields (model, job, tensors, weights) and writes the files.
#include "compiler/plan/plan_writer.h"

#include <filesystem>
#include <map>
#include <set>

#include "common/error.h"
#include "common/file_util.h"
#include "common/safetensors.h"
#include "compiler/ops/const_eval.h"
#include "compiler/passes/pass.h"
#include "schemas/plan_codec.h"

namespace of::compiler {
namespace {

struct WeightsFile {
  std::string name;  // relative to the plan's folder
  std::vector<uint8_t> bytes;
  std::set<std::string> keys;
  std::vector<std::string> buffers;  // model tensors folded into the plan, carried into checkpoints
  std::vector<std::string> carried;  // model tensors nothing reads, carried into checkpoints
  std::set<std::string> model_keys;  // entries that are state_dict tensors (not optimizer state)
};

// The value whose contents and identity a (possibly physical) value stands for.
const Value& model_value(const Compilation& c, const Value& v) {
  return v.logical >= 0 && v.data ? c.logical.values[size_t(v.logical)] : v;
}

// A tensor of the model's state_dict: an initializer under its own name, or one the exporter
// named that --folded train trains anyway.
bool is_model_tensor(const Compilation& c, const Value& v) {
  const Value& m = model_value(c, v);
  if (!m.initializer) return false;
  return !exporter_named(m.name) || (c.options.folded == "train" && m.desc.dtype == DType::f32 && numel(m.desc.shape) > 1);
}

// Optimizer state: it starts as zeros, which the runtime writes; the weights file leaves it out.
bool starts_as_zeros(const Compilation& c, const Value& v) { return model_value(c, v).optimizer_state; }

// Every tensor whose contents the run starts from: variables, and the blobs of persistent
// registers (weights; not their optimizer state, which starts as zeros), keyed by tensor name.
WeightsFile serialize_weights(const Compilation& c, const std::string& name) {
  const Graph& g = c.graph;
  const plan::Plan& p = c.tasks;
  SafetensorsWriter writer;
  WeightsFile out{.name = name, .bytes = {}, .keys = {}};
  // A parallel plan stores the whole (logical) tensor once for all its boxes on all devices; any
  // other name stored twice is a compiler bug.
  std::map<std::string, ValueId> stored_as;  // key -> the logical value (or the value) it holds
  auto add = [&](int32_t tensor, const std::string& key) {
    const Value* val = &g.values[size_t(tensor)];
    if (starts_as_zeros(c, *val)) return;
    const ValueId whole = val->logical >= 0 ? val->logical : ValueId(-2 - tensor);
    if (val->logical >= 0) val = &c.logical.values[size_t(val->logical)];
    OF_ASSERT(val->contents(), "stored tensor without contents: " + key);
    auto [it, fresh] = stored_as.emplace(key, whole);
    OF_ASSERT(fresh || it->second == whole, "two stored tensors named " + key);
    if (!fresh) return;
    out.keys.insert(key);
    if (is_model_tensor(c, g.values[size_t(tensor)])) out.model_keys.insert(key);
    writer.add(key, val->desc.dtype, val->desc.shape, val->data->data());
  };
  for (const Variable& v : p.variables) add(v.tensor, v.key);
  for (const Regst& r : p.regsts)
    if (r.persistent)
      for (const Blob& b : r.blobs) add(b.tensor, g.values[size_t(b.tensor)].name);
  // Buffers no task reads (folded into constants, like a causal mask) still belong to the
  // model's state_dict: stored once, carried into every checkpoint.
  const Graph& whole = c.logical.values.empty() ? g : c.logical;
  for (const Value& v : whole.values)
    if (v.initializer && v.data && !exporter_named(v.name) && !out.keys.count(v.name)) {
      out.keys.insert(v.name);
      out.model_keys.insert(v.name);
      (v.folded_into_plan ? out.buffers : out.carried).push_back(v.name);
      writer.add(v.name, v.desc.dtype, v.desc.shape, v.data->data());
    }
  out.bytes = writer.serialize();
  return out;
}

plan::Plan finish_plan(const Compilation& c, const WeightsFile& weights, plan::JobKind kind) {
  const Graph& g = c.graph;
  plan::Plan p = c.tasks;
  p.weights = weights.name;
  p.weights_bytes = weights.bytes.size();
  p.weights_crc32 = crc32_of(weights.bytes.data(), weights.bytes.size());
  p.model = g.name;
  // The batch is the first input's rows, whole (in a plan of several ranks each source holds a box).
  const Value& input = g.values[size_t(g.inputs[0])];
  const Shape& first = input.logical >= 0 ? c.logical.values[size_t(input.logical)].desc.shape : input.desc.shape;
  p.job = plan::Job{.kind = kind, .batch = first.empty() ? 1 : first[0], .pieces = c.options.pieces};
  if (kind != plan::JobKind::infer) p.job.label = c.training.label;
  if (kind == plan::JobKind::train) {
    p.job.micro_batches = c.options.micro_batches;
    p.job.optimizer = c.options.optimizer;
    p.job.lr = c.training.lr;
    p.job.schedule = c.options.schedule;
  }
  p.buffers = weights.buffers;
  p.carried = weights.carried;
  for (const Value& v : g.values) {
    plan::LogicalTensor t{v.name, v.desc, {}, {}};
    t.model = is_model_tensor(c, v);
    t.zeros = v.data && starts_as_zeros(c, v);
    if (v.logical >= 0 && (v.data || v.graph_input)) {  // a box of a stored tensor, or a source's of a graph input
      t.full_shape = c.logical.values[size_t(v.logical)].desc.shape;
      t.shard_begin = v.shard_begin;
    }
    p.tensors.push_back(std::move(t));
  }
  p.layouts = c.parallel.tensors;
  p.boxings = c.parallel.boxings;
  return p;
}

void refuse_overwriting(const std::filesystem::path& plan, const std::string& weights_path) {
  if (std::filesystem::path(weights_path).lexically_normal() == plan.lexically_normal())
    fail({.file = plan.string()}, "the plan would overwrite its own weights file; name the plan *.ofp");
}

}  // namespace

PlanOutputs plan_outputs(const std::string& plan_path, bool training) {
  const std::filesystem::path path(plan_path);
  PlanOutputs o{.plan = plan_path, .weights = (path.parent_path() / (path.stem().string() + ".safetensors")).string(), .eval_plan = {}};
  if (training) o.eval_plan = (path.parent_path() / (path.stem().string() + ".eval.ofp")).string();
  return o;
}

std::string write_plan(const Compilation& c, const std::string& plan_path) {
  std::filesystem::path path(plan_path);
  const PlanOutputs outputs = plan_outputs(plan_path, false);
  WeightsFile weights = serialize_weights(c, std::filesystem::path(outputs.weights).filename().string());
  plan::Plan p = finish_plan(c, weights, c.options.eval_metrics ? plan::JobKind::eval : plan::JobKind::infer);
  std::vector<uint8_t> plan_bytes = plan::encode(p);
  std::string weights_path = (path.parent_path() / weights.name).string();
  refuse_overwriting(path, weights_path);
  write_file_atomic(weights_path, weights.bytes);
  write_file_atomic(plan_path, plan_bytes);
  return weights_path;
}

std::string write_training_plans(const Compilation& train, const Compilation& eval, const std::string& plan_path) {
  std::filesystem::path path(plan_path);
  const PlanOutputs outputs = plan_outputs(plan_path, true);
  WeightsFile weights = serialize_weights(train, std::filesystem::path(outputs.weights).filename().string());
  plan::Plan tp = finish_plan(train, weights, plan::JobKind::train);
  plan::Plan ep = finish_plan(eval, weights, plan::JobKind::eval);
  for (const Variable& v : ep.variables)
    if (!weights.keys.count(v.key)) fail({.file = plan_path, .field = "tensor '" + v.key + "'"}, "the evaluation plan reads a tensor the training plan does not store");
  // The evaluation plan carries every model tensor it does not read (a BatchNorm's
  // num_batches_tracked, a folded mask), so that it accepts the training run's checkpoints.
  ep.buffers.clear();
  ep.carried.clear();
  std::set<std::string> read_by_eval, folded_by_eval;
  for (const Variable& v : ep.variables) read_by_eval.insert(v.key);
  for (const Value& v : (eval.logical.values.empty() ? eval.graph : eval.logical).values)
    if (v.folded_into_plan) folded_by_eval.insert(v.name);
  for (const std::string& key : weights.model_keys)
    if (!read_by_eval.count(key)) (folded_by_eval.count(key) ? ep.buffers : ep.carried).push_back(key);
  const std::filesystem::path eval_path(outputs.eval_plan);
  tp.job.eval_plan = eval_path.filename().string();
  std::string weights_path = (path.parent_path() / weights.name).string();
  refuse_overwriting(path, weights_path);
  refuse_overwriting(eval_path, weights_path);
  if (eval_path.lexically_normal() == path.lexically_normal()) fail({.file = plan_path}, "the plan would overwrite its evaluation plan; name it *.ofp");
  write_file_atomic(weights_path, weights.bytes);
  write_file_atomic(eval_path.string(), plan::encode(ep));
  write_file_atomic(plan_path, plan::encode(tp));
  return weights_path;
}

}  // namespace of::compiler
