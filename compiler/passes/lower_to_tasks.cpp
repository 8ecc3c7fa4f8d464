// SPDX-License-Identifier: Apache-2.0
// lower-to-tasks: afterwards the task graph has a source task per device that holds graph inputs
// (its boxes of them, one register; one device in a plan of one rank, the first reader on each
// rank otherwise: see parallelize's input_home), one compute task per node (its outputs, one
// register), one sink task (all graph outputs), a variable per constant that a kernel reads at run
// time, and every register knows its consumers. The first source, on device 0, leads: every
// other source is paced by its register (reading no blob), so all of them stop at the same piece
// when the lead stops early (SIGINT ends a training run at a step boundary).
// A node that updates inputs in place (an optimizer update) instead owns a persistent register
// holding those inputs (a weight and its state): every other reader of the weight reads that
// register, and the update reads and writes it through own inputs. Task ids follow node order
// after the sources (node i is task i + sources), so persistent registers are made first and
// readers that come before their update find them. A task runs on its node's device (parallelize sets it; else device 0),
// and each register and variable lives in the arena of the device that produces or reads it.
// A node's control inputs (a recompute clone's) become registers its task consumes without
// reading. A collective part (boxing's collective_part kernel) is a collective task: it reads
// the registers of other devices of its rank where they are.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "common/error.h"
#include "compiler/passes/pass.h"

namespace of::compiler {
namespace {

Regst make_regst(TaskGraph& tg, TaskId producer, const Graph& g, const std::vector<ValueId>& values, int32_t slots, int32_t device) {
  Regst r;
  r.arena = device;  // one arena per device, in device order
  r.id = RegstId(tg.regsts.size());
  r.producer = producer;
  r.slots = slots;
  uint64_t offset = 0;
  for (ValueId v : values) {
    const TensorDesc& d = g.values[v].desc;
    Blob b{.tensor = v, .desc = d, .offset = offset, .bytes = uint64_t(d.bytes())};
    offset = add_aligned(offset, b.bytes);
    r.blobs.push_back(b);
  }
  // A zero-byte register still gets a distinct address per slot.
  r.slot_bytes = std::max<uint64_t>(offset, kAlignment);
  return r;
}

void add_input(TaskGraph& tg, Task& t, TaskInput in) {
  t.inputs.push_back(in);
  if (in.kind != InputKind::regst) return;
  if (std::find(t.in_regsts.begin(), t.in_regsts.end(), in.id) == t.in_regsts.end()) {
    t.in_regsts.push_back(in.id);
    tg.regsts[in.id].consumers.push_back(t.id);
  }
}

}  // namespace

bool LowerToTasks::run(Compilation& c) {
  const Graph& g = c.graph;
  TaskGraph tg;
  const std::vector<int32_t> rank = rank_of_devices(c.options, c.parallel.devices);
  std::vector<int32_t> devices_of_rank(rank.empty() ? 0 : size_t(*std::max_element(rank.begin(), rank.end()) + 1), 0);
  for (int32_t d = 0; d < c.parallel.devices; ++d) {
    // A device's index counts the devices of its rank before it.
    tg.devices.push_back(DeviceRef{.rank = rank[size_t(d)], .kind = c.options.device_kind, .index = devices_of_rank[size_t(rank[size_t(d)])]++});
    tg.arenas.push_back(Arena{.id = d, .device = d, .bytes = 0});
  }
  // A plan on GPUs gives each rank a host device after all of them (cpu:0 of that rank): sources
  // read batches, the sink hands outputs to ofrun and snapshots write checkpoints in host memory,
  // so what crosses between host and GPU does so in transfer tasks (insert-transfers), never
  // inside a kernel. A CPU plan's host is the device itself.
  auto host_of = [&, gpus = c.options.device_kind != 0](int32_t d) {
    return gpus ? c.parallel.devices + rank[size_t(std::max(d, 0))] : d;
  };
  if (c.options.device_kind != 0)
    for (int32_t r = 0; r < int32_t(devices_of_rank.size()); ++r) {
      tg.devices.push_back(DeviceRef{.rank = r, .kind = 0, .index = 0});
      tg.arenas.push_back(Arena{.id = int32_t(tg.arenas.size()), .device = int32_t(tg.devices.size()) - 1, .bytes = 0});
    }
  const int32_t slots = c.options.slots;
  if (slots < 1) fail({}, "--slots must be at least 1, got {}", slots);
  // A training step of one piece on unstaged devices runs one piece at a time: every task of piece
  // n + 1 that reads a weight waits for piece n's update, and everything downstream for it. A
  // second slot in the registers after the source would only hold bytes (on ResNet-18 80 MiB of
  // activations, a second copy of each kept for the backward pass). They get one; the source
  // keeps --slots, so the next batch still loads while this step trains. Micro-batches and
  // pipeline stages stream several pieces per step and keep --slots.
  const bool one_piece_at_a_time = c.options.train && c.options.micro_batches == 1 && c.options.pp == 1;
  const int32_t computed_slots = one_piece_at_a_time ? 1 : slots;

  // Where each runtime value lives: (regst, blob) for produced values, variable id for constants.
  struct Home {
    InputKind kind;
    int32_t id;
    int32_t blob;
  };
  std::unordered_map<ValueId, Home> home;
  std::vector<RegstId> persistent_of(g.nodes.size(), -1);

  // The graph inputs by the device that holds them, in input order on each; device 0 first.
  std::vector<int32_t> source_devices{0};
  std::vector<std::vector<ValueId>> source_values(1);
  for (ValueId v : g.inputs) {
    const int32_t d = g.values[v].input_device;
    auto at = std::find(source_devices.begin(), source_devices.end(), d);
    if (at == source_devices.end()) {
      source_devices.push_back(d);
      source_values.emplace_back();
      at = source_devices.end() - 1;
    }
    source_values[size_t(at - source_devices.begin())].push_back(v);
  }
  const auto sources = TaskId(source_devices.size());
  std::vector<RegstId> source_of_rank(devices_of_rank.size(), 0);  // paces tasks with no pieces of their own
  for (TaskId s = 0; s < sources; ++s) {
    const int32_t d = source_devices[size_t(s)];
    Task source{.id = s, .kind = TaskKind::source, .name = s == 0 ? "source" : fmt::format("source@{}", d), .op = "Source", .device = host_of(d)};
    for (ValueId v : source_values[size_t(s)]) source.io_names.push_back(g.values[v].name);
    // A source belongs to the stage of the device it feeds (a later stage reads its labels itself).
    if (size_t(d) < c.parallel.stage_of_device.size()) source.stage = c.parallel.stage_of_device[size_t(d)];
    const Regst r = make_regst(tg, s, g, source_values[size_t(s)], slots, host_of(d));
    source.out_regsts.push_back(r.id);
    for (size_t i = 0; i < source_values[size_t(s)].size(); ++i) home[source_values[size_t(s)][i]] = {InputKind::regst, r.id, int32_t(i)};
    if (s > 0) {
      source.in_regsts.push_back(0);
      tg.regsts[0].consumers.push_back(s);
    }
    if (s == 0 || source_of_rank[size_t(rank[size_t(d)])] == 0) source_of_rank[size_t(rank[size_t(d)])] = r.id;
    tg.regsts.push_back(r);
    tg.tasks.push_back(std::move(source));
  }

  // Persistent registers in the order of the tensors they hold first (the model's order of its
  // weights and buffers, as a state_dict lists them), whatever the order of the nodes updating them
  // (add-optimizer places each update early in the backward pass): checkpoints list their
  // tensors, and a refused one names its first mismatch, in that order.
  std::vector<size_t> inplace_nodes;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!g.nodes[n].inplace.empty()) inplace_nodes.push_back(n);
  auto first_state = [&](size_t n) {
    const Value& v = g.values[size_t(g.nodes[n].inputs[size_t(g.nodes[n].inplace[0])])];
    return v.logical >= 0 ? v.logical : g.nodes[n].inputs[size_t(g.nodes[n].inplace[0])];
  };
  std::stable_sort(inplace_nodes.begin(), inplace_nodes.end(), [&](size_t a, size_t b) { return first_state(a) < first_state(b); });
  for (size_t n : inplace_nodes) {
    const Node& node = g.nodes[n];
    std::vector<ValueId> state;
    for (int32_t k : node.inplace) state.push_back(node.inputs[size_t(k)]);
    for (ValueId v : state)
      if (!g.values[v].data || home.count(v))
        fail({.file = g.source_file, .node = node.name, .op = node.op_type}, "updates '{}' in place, which is not a constant of its own", g.values[v].name);
    Regst r = make_regst(tg, TaskId(n) + sources, g, state, 1, node.device);
    r.persistent = true;
    // An optimizer update runs once per step; a running-statistics update once per piece.
    r.pieces_per_version = node.state_per_piece ? 1 : c.options.micro_batches;
    for (size_t k = 0; k < state.size(); ++k) home[state[k]] = {InputKind::regst, r.id, int32_t(k)};
    persistent_of[n] = r.id;
    tg.regsts.push_back(std::move(r));
  }

  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    // Boxing's collective parts read other devices' values of their rank in place (boxing.h).
    const TaskKind kind = node.kernel == "collective_part" ? TaskKind::collective : TaskKind::compute;
    Task t{.id = TaskId(tg.tasks.size()), .kind = kind, .name = node.name, .op = node.op_type,
           .kernel = node.kernel, .attrs = node.kernel_attrs, .device = node.device};
    t.once_per_version = node.once_per_version;
    t.stage = c.parallel.stage_of_device[size_t(node.device)];
    OF_ASSERT(t.id == TaskId(n) + sources, "task ids follow node order");
    for (size_t k = 0; k < node.runtime_inputs.size(); ++k) {
      const ValueId v = node.runtime_inputs[k];
      const auto own = std::find(node.inplace.begin(), node.inplace.end(), int32_t(k));
      if (own != node.inplace.end()) {
        add_input(tg, t, TaskInput{.kind = InputKind::own, .id = persistent_of[n], .blob = int32_t(own - node.inplace.begin())});
        continue;
      }
      auto it = home.find(v);
      if (it == home.end()) {
        const Value& val = g.values[v];
        OF_ASSERT(val.data.has_value(), "runtime input without a producer: " + val.name);
        Variable var{.id = VariableId(tg.variables.size()), .tensor = v, .key = val.name, .arena = node.device,
                     .bytes = uint64_t(val.desc.bytes())};
        tg.variables.push_back(var);
        it = home.emplace(v, Home{InputKind::variable, var.id, 0}).first;
      }
      TaskInput in{.kind = it->second.kind, .id = it->second.id, .blob = it->second.blob};
      if (k < node.runtime_views.size()) in.view = node.runtime_views[k];
      OF_ASSERT(in.view.empty() || in.kind == InputKind::regst, "a view of a constant: " + g.values[v].name);
      add_input(tg, t, std::move(in));
    }
    // A control input: the task consumes the register holding the value, reading no blob of it,
    // so it acts on a piece only after that value's producer has.
    for (ValueId v : node.control_inputs) {
      const auto it = home.find(v);
      OF_ASSERT(it != home.end() && it->second.kind == InputKind::regst && !tg.regsts[size_t(it->second.id)].persistent,
                "a control input that is not a streamed value: " + g.values[size_t(v)].name);
      const RegstId r = it->second.id;
      if (std::find(t.in_regsts.begin(), t.in_regsts.end(), r) != t.in_regsts.end()) continue;
      t.in_regsts.push_back(r);
      tg.regsts[size_t(r)].consumers.push_back(t.id);
    }
    // A task acts once per piece of its inputs. One that reads only weights (the Transpose of an
    // nn.Linear weight, the Slices of an LSTM's) or constants has no pieces of its own: the
    // source of its rank paces it, like the snapshot task, so it runs once per piece and reads the
    // weight version of that piece.
    bool streamed = false;
    for (RegstId r : t.in_regsts) streamed = streamed || !tg.regsts[r].persistent;
    if (!streamed) {
      const RegstId pace = source_of_rank[size_t(rank[size_t(std::max(node.device, 0))])];
      t.in_regsts.push_back(pace);
      tg.regsts[size_t(pace)].consumers.push_back(t.id);
    }
    // An in-place node writes its state (the persistent register); outputs after the state's are
    // streamed as any node's (ZeRO 1/2's update hands a copy of its new shard on to be gathered).
    if (persistent_of[n] >= 0) t.out_regsts.push_back(persistent_of[n]);
    const std::vector<ValueId> streamed_outputs(node.outputs.begin() + std::ptrdiff_t(node.inplace.size()), node.outputs.end());
    if (persistent_of[n] < 0 || !streamed_outputs.empty()) {
      Regst out = make_regst(tg, t.id, g, streamed_outputs, node.slots > 0 ? node.slots : computed_slots, node.device);
      if (node.kernel == "accumulate") out.acts_per_piece = int32_t(node.kernel_attrs.get_int("micro_batches", 1));
      for (size_t i = 0; i < streamed_outputs.size(); ++i) home[streamed_outputs[i]] = {InputKind::regst, out.id, int32_t(i)};
      t.out_regsts.push_back(out.id);
      tg.regsts.push_back(std::move(out));
    }
    tg.tasks.push_back(std::move(t));
  }

  Task sink{.id = TaskId(tg.tasks.size()), .kind = TaskKind::sink, .name = "sink", .op = "Sink", .device = host_of(0)};
  for (ValueId v : g.outputs) {
    // An output folded into a constant (Shape(x)) or naming an initializer has no home here.
    auto found = home.find(v);
    if (found == home.end() || found->second.kind != InputKind::regst || g.values[v].graph_input ||
        tg.regsts[found->second.id].persistent)
      fail({.file = g.source_file, .field = "output '" + g.values[v].name + "'"},
           "is a graph input or a constant; only computed outputs are supported");
    sink.io_names.push_back(g.values[v].name);
    add_input(tg, sink, TaskInput{.kind = InputKind::regst, .id = found->second.id, .blob = found->second.blob});
  }
  const RegstId last_output = sink.inputs.empty() ? -1 : sink.inputs[0].id;
  tg.tasks.push_back(std::move(sink));

  // Training: each rank checkpoints what it holds, with one snapshot task on its first device that
  // holds any ("snapshot" on rank 0, "snapshot@R" elsewhere), reading its own rank's registers
  // only. A persistent tensor (a weight, its optimizer state, a running statistic) is written whole
  // by the lowest rank holding a box of it, which reads its boxes of it. A box of it that the
  // writer's rank lacks (a tensor split over ranks: tensor parallelism) is read by the lowest
  // rank holding it, whose saver hands it to the writer's when a checkpoint is saved (off the
  // actors' path: checkpoint.h), so no weight crosses ranks every step. A replica of what the
  // writer holds (data parallelism) is read by nobody. The snapshot reads one piece at a time,
  // paced by the loss on the loss's rank and by its rank's source elsewhere, so that it sees each
  // version of all its tensors together.
  auto rank_of_regst = [&](RegstId r) { return rank[size_t(tg.arenas[size_t(tg.regsts[size_t(r)].arena)].device)]; };
  // The boxes (name, where it begins, its shape) of persistent tensors.
  using Box = std::tuple<std::string, std::vector<int64_t>, Shape>;
  auto box_of = [&](const Blob& b) {
    const Value& v = g.values[size_t(b.tensor)];
    return Box{v.name, v.shard_begin, v.desc.shape};
  };
  std::unordered_map<std::string, int32_t> writer;  // tensor name -> the rank that checkpoints it
  std::map<Box, int32_t> first_holder;               // box -> the lowest rank holding it
  std::vector<std::set<Box>> held(devices_of_rank.size());
  // ZeRO 1/2's replicas are the weights (their shards are slices of them): saved as plain dp's are.
  auto saved = [&](const Regst& r) { return r.persistent; };
  for (const Regst& r : tg.regsts)
    if (saved(r))
      for (const Blob& b : r.blobs) {
        const int32_t at = rank_of_regst(r.id);
        auto [w, fresh] = writer.try_emplace(g.values[size_t(b.tensor)].name, at);
        if (!fresh) w->second = std::min(w->second, at);
        auto [h, first] = first_holder.try_emplace(box_of(b), at);
        if (!first) h->second = std::min(h->second, at);
        held[size_t(at)].insert(box_of(b));
      }
  if (!writer.empty() && last_output >= 0) {
    const int32_t loss_rank = rank_of_regst(last_output);
    for (int32_t at = 0; at < int32_t(devices_of_rank.size()); ++at) {
      Task snap{.id = TaskId(tg.tasks.size()), .kind = TaskKind::snapshot, .name = at == 0 ? "snapshot" : fmt::format("snapshot@{}", at),
                .op = "Snapshot", .device = -1};
      std::set<Box> handed;  // boxes this rank hands to another's writer (one copy of each)
      for (const Regst& r : tg.regsts) {
        if (!saved(r) || rank_of_regst(r.id) != at) continue;
        for (size_t b = 0; b < r.blobs.size(); ++b) {
          const Box box = box_of(r.blobs[b]);
          const int32_t w = writer.at(std::get<0>(box));
          if (w != at && (held[size_t(w)].count(box) || first_holder.at(box) != at || !handed.insert(box).second)) continue;
          const int32_t d = tg.arenas[size_t(r.arena)].device;
          if (snap.device < 0 || d < snap.device) snap.device = d;
          snap.inputs.push_back(TaskInput{.kind = InputKind::regst, .id = r.id, .blob = int32_t(b)});
        }
      }
      if (snap.inputs.empty()) continue;  // this rank checkpoints nothing
      snap.device = host_of(snap.device);
      const RegstId pace = at == loss_rank ? last_output : source_of_rank[size_t(at)];
      snap.in_regsts.push_back(pace);
      tg.regsts[size_t(pace)].consumers.push_back(snap.id);
      std::vector<TaskInput> reads = std::move(snap.inputs);
      snap.inputs.clear();
      for (TaskInput& in : reads) add_input(tg, snap, in);
      tg.tasks.push_back(std::move(snap));
    }
  }
  c.tasks = std::move(tg);
  return true;
}

}  // namespace of::compiler
