// SPDX-License-Identifier: Apache-2.0
// lower-to-tasks: afterwards the task graph has one source task (all graph inputs, one register),
// one compute task per node (its outputs, one register), one sink task (all graph outputs), a
// variable per constant that a kernel reads at run time, and every register knows its consumers.
// Everything is placed on one CPU device for now.
#include <algorithm>
#include <unordered_map>

#include "common/error.h"
#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

Regst make_regst(TaskGraph& tg, TaskId producer, const Graph& g, const std::vector<ValueId>& values, int32_t slots) {
  Regst r;
  r.id = RegstId(tg.regsts.size());
  r.producer = producer;
  r.slots = slots;
  uint64_t offset = 0;
  for (ValueId v : values) {
    const TensorDesc& d = g.values[v].desc;
    Blob b{.tensor = v, .desc = d, .offset = offset, .bytes = uint64_t(d.bytes())};
    offset = align_up(offset + b.bytes);
    r.blobs.push_back(b);
  }
  // A zero-byte register still gets a distinct address per slot.
  r.slot_bytes = std::max<uint64_t>(offset, kAlignment);
  return r;
}

void add_input(TaskGraph& tg, Task& t, TaskInput in) {
  t.inputs.push_back(in);
  if (in.variable) return;
  if (std::find(t.in_regsts.begin(), t.in_regsts.end(), in.id) == t.in_regsts.end()) {
    t.in_regsts.push_back(in.id);
    tg.regsts[in.id].consumers.push_back(t.id);
  }
}

}  // namespace

bool LowerToTasks::run(Compilation& c) {
  const Graph& g = c.graph;
  TaskGraph tg;
  tg.devices.push_back(DeviceRef{.rank = 0, .kind = 0, .index = 0});
  tg.arenas.push_back(Arena{.id = 0, .device = 0, .bytes = 0});
  const int32_t slots = c.options.slots;
  if (slots < 1) fail({}, "--slots must be at least 1, got {}", slots);

  // Where each runtime value lives: (regst, blob) for produced values, variable id for constants.
  struct Home {
    bool variable;
    int32_t id;
    int32_t blob;
  };
  std::unordered_map<ValueId, Home> home;

  Task source{.id = 0, .kind = TaskKind::source, .name = "source", .op = "Source"};
  for (ValueId v : g.inputs) source.io_names.push_back(g.values[v].name);
  tg.regsts.push_back(make_regst(tg, source.id, g, g.inputs, slots));
  source.out_regsts.push_back(0);
  for (size_t i = 0; i < g.inputs.size(); ++i) home[g.inputs[i]] = {false, 0, int32_t(i)};
  tg.tasks.push_back(std::move(source));

  for (const Node& node : g.nodes) {
    Task t{.id = TaskId(tg.tasks.size()), .kind = TaskKind::compute, .name = node.name, .op = node.op_type,
           .kernel = node.kernel, .attrs = node.kernel_attrs};
    for (ValueId v : node.runtime_inputs) {
      auto it = home.find(v);
      if (it == home.end()) {
        const Value& val = g.values[v];
        OF_ASSERT(val.data.has_value(), "runtime input without a producer: " + val.name);
        Variable var{.id = VariableId(tg.variables.size()), .tensor = v, .key = val.name, .arena = 0,
                     .bytes = uint64_t(val.desc.bytes())};
        tg.variables.push_back(var);
        it = home.emplace(v, Home{true, var.id, 0}).first;
      }
      add_input(tg, t, TaskInput{.variable = it->second.variable, .id = it->second.id, .blob = it->second.blob});
    }
    // A task acts once per piece of its inputs: one that reads only constants has no pieces.
    if (t.in_regsts.empty())
      fail({.file = g.source_file, .node = node.name, .op = node.op_type},
           "computes only from constants; constant folding is not supported yet (export with do_constant_folding=True)");
    Regst out = make_regst(tg, t.id, g, node.outputs, slots);
    for (size_t i = 0; i < node.outputs.size(); ++i) home[node.outputs[i]] = {false, out.id, int32_t(i)};
    t.out_regsts.push_back(out.id);
    tg.regsts.push_back(std::move(out));
    tg.tasks.push_back(std::move(t));
  }

  Task sink{.id = TaskId(tg.tasks.size()), .kind = TaskKind::sink, .name = "sink", .op = "Sink"};
  for (ValueId v : g.outputs) {
    const Home& h = home.at(v);
    if (h.variable || g.values[v].graph_input)
      fail({.file = g.source_file, .field = "output '" + g.values[v].name + "'"},
           "is a graph input or a constant; only computed outputs are supported");
    sink.io_names.push_back(g.values[v].name);
    add_input(tg, sink, TaskInput{.variable = false, .id = h.id, .blob = h.blob});
  }
  tg.tasks.push_back(std::move(sink));
  c.tasks = std::move(tg);
  return true;
}

}  // namespace of::compiler
