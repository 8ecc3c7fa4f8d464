// SPDX-License-Identifier: Apache-2.0
// insert-transfers on task graphs built here and on compiled parallel plans: afterwards only
// transfer tasks (and the snapshot) touch another device, ids stay topological, and every
// register's consumers are exactly the tasks that read it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

Regst regst(RegstId id, TaskId producer, int32_t arena, std::vector<of::TensorDesc> descs) {
  Regst r{.id = id, .producer = producer, .slots = 2, .arena = arena};
  uint64_t offset = 0;
  for (const of::TensorDesc& d : descs) {
    r.blobs.push_back(Blob{.tensor = -1, .desc = d, .offset = offset, .bytes = uint64_t(d.bytes())});
    offset = add_aligned(offset, uint64_t(d.bytes()));
  }
  r.slot_bytes = offset;
  return r;
}

Task task(TaskId id, TaskKind kind, std::string name, std::string kernel, int32_t device, std::vector<TaskInput> inputs,
          std::vector<RegstId> outs) {
  Task t{.id = id, .kind = kind, .name = std::move(name), .op = kernel, .kernel = kernel, .device = device};
  t.inputs = std::move(inputs);
  for (const TaskInput& in : t.inputs)
    if (std::find(t.in_regsts.begin(), t.in_regsts.end(), in.id) == t.in_regsts.end()) t.in_regsts.push_back(in.id);
  t.out_regsts = std::move(outs);
  return t;
}

// source (device 0: x [4], y [2]) -> copy of x on device 1, relu of y on device 1 -> sink on
// device 0 reading both.
Compilation two_device_graph() {
  Compilation c;
  TaskGraph& tg = c.tasks;
  tg.devices = {DeviceRef{.index = 0}, DeviceRef{.index = 1}};
  tg.arenas = {Arena{.id = 0, .device = 0}, Arena{.id = 1, .device = 1}};
  const of::TensorDesc x{{4}, of::DType::f32}, y{{2}, of::DType::f32};
  tg.regsts = {regst(0, 0, 0, {x, y}), regst(1, 1, 1, {x}), regst(2, 2, 1, {y})};
  tg.tasks = {task(0, TaskKind::source, "source", "", 0, {}, {0}),
              task(1, TaskKind::compute, "x/copy", "copy", 1, {{InputKind::regst, 0, 0}}, {1}),
              task(2, TaskKind::compute, "relu", "relu", 1, {{InputKind::regst, 0, 1}}, {2}),
              task(3, TaskKind::sink, "sink", "", 0, {{InputKind::regst, 1, 0}, {InputKind::regst, 2, 0}}, {})};
  for (const Task& t : tg.tasks)
    for (RegstId r : t.in_regsts) tg.regsts[size_t(r)].consumers.push_back(t.id);
  return c;
}

int32_t device_of(const TaskGraph& tg, RegstId r) { return tg.arenas[size_t(tg.regsts[size_t(r)].arena)].device; }

// The properties every plan has afterwards.
void check_local(const TaskGraph& tg) {
  for (size_t i = 0; i < tg.tasks.size(); ++i) {
    const Task& t = tg.tasks[i];
    INFO("task " << i << " " << t.name);
    CHECK(t.id == TaskId(i));
    for (RegstId r : t.out_regsts) CHECK(device_of(tg, r) == t.device);
    for (RegstId r : t.in_regsts) {
      const Regst& reg = tg.regsts[size_t(r)];
      if (!reg.persistent) CHECK(reg.producer < t.id);  // topological
      CHECK(std::count(reg.consumers.begin(), reg.consumers.end(), t.id) == 1);
      if (t.kind == TaskKind::transfer) CHECK(device_of(tg, r) != t.device);
      else if (t.kind == TaskKind::collective) CHECK(tg.devices[size_t(device_of(tg, r))].rank == tg.devices[size_t(t.device)].rank);
      else if (reg.blobs.empty())  // a control register (a share group's proxy): ordering within one rank
        CHECK(tg.devices[size_t(device_of(tg, r))].rank == tg.devices[size_t(t.device)].rank);
      else if (t.kind != TaskKind::snapshot && !reg.persistent) CHECK(device_of(tg, r) == t.device);
    }
  }
  for (const Regst& r : tg.regsts) {
    const auto& outs = tg.tasks[size_t(r.producer)].out_regsts;
    CHECK(std::count(outs.begin(), outs.end(), r.id) == 1);
    for (TaskId c : r.consumers) {
      const auto& ins = tg.tasks[size_t(c)].in_regsts;
      CHECK(std::count(ins.begin(), ins.end(), r.id) == 1);
    }
  }
}

}  // namespace

TEST_CASE("insert_transfers: a remote copy becomes a transfer and other remote readers get one mirror per device", "[compiler]") {
  Compilation c = two_device_graph();
  REQUIRE(InsertTransfers().run(c));
  const TaskGraph& tg = c.tasks;
  check_local(tg);
  // source, x/copy (now a transfer), the mirror of the source for relu, relu, one mirror of each of
  // relu's and the copy's registers for the sink, sink.
  REQUIRE(tg.tasks.size() == 7);
  CHECK(tg.tasks[1].kind == TaskKind::transfer);
  CHECK(tg.tasks[1].name == "x/copy");
  CHECK(tg.tasks[1].kernel.empty());
  const Task& mirror = tg.tasks[2];
  CHECK(mirror.kind == TaskKind::transfer);
  CHECK(mirror.name == "source/transfer/d1");
  CHECK(mirror.device == 1);
  REQUIRE(mirror.inputs.size() == 1);  // only what device 1 reads of the source's register: y
  CHECK(mirror.inputs[0].blob == 1);
  const Regst& m = tg.regsts[size_t(mirror.out_regsts[0])];
  REQUIRE(m.blobs.size() == 1);
  CHECK(m.blobs[0].desc.shape == of::Shape{2});
  CHECK(m.blobs[0].offset == 0);
  CHECK(m.slot_bytes == of::plan::kAlignment);
  CHECK(tg.tasks[3].name == "relu");
  CHECK(tg.tasks[3].inputs[0].id == m.id);  // relu reads y, blob 0 of the mirror
  CHECK(tg.tasks[3].inputs[0].blob == 0);
  CHECK(tg.tasks[4].kind == TaskKind::transfer);
  CHECK(tg.tasks[5].kind == TaskKind::transfer);
  CHECK(tg.tasks[6].kind == TaskKind::sink);
  CHECK(tg.tasks[6].device == 0);
  // The source's register is read on device 0 by nobody now and on device 1 by two transfers.
  CHECK(tg.regsts[0].consumers == std::vector<TaskId>{1, 2});
}

TEST_CASE("insert_transfers: a register that only paces a task on another device is mirrored without its blobs", "[compiler]") {
  Compilation c = two_device_graph();
  // relu on device 1 is paced by the source's register but reads nothing of it (as a weight's
  // Transpose is): its mirror carries no bytes.
  TaskGraph& g = c.tasks;
  g.tasks[2].inputs.clear();
  REQUIRE(InsertTransfers().run(c));
  check_local(g);
  const Task& mirror = g.tasks[2];
  CHECK(mirror.name == "source/transfer/d1");
  CHECK(mirror.inputs.empty());
  const Regst& m = g.regsts[size_t(mirror.out_regsts[0])];
  CHECK(m.blobs.empty());
  CHECK(m.slot_bytes == of::plan::kAlignment);  // still a slot per piece, to pace the reader
  CHECK(g.tasks[3].in_regsts == std::vector<RegstId>{m.id});
}

// A collective task reads its own rank's registers in place; the source's register of another
// rank only paces it (as it paces a gather of weights, which reads only persistent registers).
TEST_CASE("insert_transfers: a collective paced by another rank's register gets a mirror without blobs and keeps its own rank's reads", "[compiler]") {
  Compilation c = two_device_graph();
  TaskGraph& g = c.tasks;
  g.devices = {DeviceRef{.rank = 0, .index = 0}, DeviceRef{.rank = 1, .index = 0}};
  Task& part = g.tasks[2];  // relu on device 1 becomes a collective reading x's copy there
  part.kind = TaskKind::collective;
  part.kernel = part.op = "collective_part";
  part.inputs = {{InputKind::regst, 1, 0}};
  part.in_regsts = {1, 0};
  g.regsts[0].consumers = {1, 2};
  g.regsts[1].consumers = {2, 3};
  REQUIRE(InsertTransfers().run(c));
  check_local(g);
  auto it = std::find_if(g.tasks.begin(), g.tasks.end(), [](const Task& t) { return t.kind == TaskKind::collective; });
  REQUIRE(it != g.tasks.end());
  REQUIRE(it->in_regsts.size() == 2);
  CHECK(it->in_regsts[0] == 1);  // read in place
  const Regst& m = g.regsts[size_t(it->in_regsts[1])];
  CHECK(g.tasks[size_t(m.producer)].name == "source/transfer/d1");
  CHECK(m.blobs.empty());
  CHECK(it->inputs[0].id == 1);

  // Reading a blob of another rank's register is boxing's bug, not something to mirror.
  Compilation bad = two_device_graph();
  bad.tasks.devices = {DeviceRef{.rank = 0, .index = 0}, DeviceRef{.rank = 1, .index = 0}};
  bad.tasks.tasks[2].kind = TaskKind::collective;
  CHECK_THROWS_WITH(InsertTransfers().run(bad), Catch::Contains("collective task 'relu' reads a register of another rank"));
}

TEST_CASE("insert_transfers: a one-device plan is left as it is", "[compiler]") {
  Compilation c = two_device_graph();
  for (Task& t : c.tasks.tasks) t.device = 0;
  for (Regst& r : c.tasks.regsts) r.arena = 0;
  const TaskGraph before = c.tasks;
  CHECK_FALSE(InsertTransfers().run(c));
  REQUIRE(c.tasks.tasks.size() == before.tasks.size());
  for (size_t i = 0; i < before.tasks.size(); ++i) {
    CHECK(c.tasks.tasks[i].name == before.tasks[i].name);
    CHECK(c.tasks.tasks[i].in_regsts == before.tasks[i].in_regsts);
  }
}

TEST_CASE("insert_transfers: compiled dp tp and pp plans touch only their own devices", "[compiler]") {
  struct Case {
    const char* model;
    int32_t dp, tp, pp, micro_batches, ranks = 1, zero = 0;
  };
  for (const Case& k : {Case{"mlp.onnx", 2, 1, 1, 1}, Case{"mlp.onnx", 1, 2, 1, 1}, Case{"mlp.onnx", 1, 1, 2, 2},
                        Case{"mlp.onnx", 2, 2, 1, 1}, Case{"cnn.onnx", 2, 1, 1, 1}, Case{"mlp.onnx", 2, 2, 1, 1, 2, 3}}) {
    INFO(k.model << " dp " << k.dp << " tp " << k.tp << " pp " << k.pp << " ranks " << k.ranks << " zero " << k.zero);
    CompileOptions o;
    o.loss = "cross_entropy";
    o.train = true;
    o.devices = k.dp * k.tp * k.pp;
    o.dp = k.dp;
    o.tp = k.tp;
    o.pp = k.pp;
    o.micro_batches = k.micro_batches;
    o.ranks = k.ranks;
    o.zero = k.zero;
    Compilation c = compile_model(fixture(k.model), o);
    check_local(c.tasks);
    CHECK(std::any_of(c.tasks.tasks.begin(), c.tasks.tasks.end(), [](const Task& t) { return t.kind == TaskKind::transfer; }));
  }
}
