// SPDX-License-Identifier: Apache-2.0
// insert-transfers: afterwards every task touches only its own device's arenas, except transfer
// tasks, collective tasks (which read other devices of their own rank in place), snapshot tasks (each reads the weights its rank checkpoints where
// they are, and another rank's boxes of a tensor split over ranks) and reads of another device's weights (persistent registers: a transfer would have
// to carry their versions; fuzzed models make boxing copy one). A transfer task reads tensors of one register of another device and writes them, in
// order, into a register of its own device. A boxing copy from another device is such a transfer
// already and becomes one. Any other streamed register read on another device gets, per reading
// device, one transfer task there that mirrors what the readers there read of it (those blobs, in
// register order), and every reader there reads the mirror instead. A reader the register only
// paces (a weight's Transpose paced by the source) reads no blob: a mirror for pacing alone has
// none, so the source's batch does not cross to a device that only needs to know a piece began. In one process a transfer is a copy; across ranks
// it is where the transport moves the bytes (the design card's locality invariant: the plan says
// which bytes cross, the runtime never reaches into a device it does not own).
//
// A mirroring transfer is placed just before the first task of its device that reads it, so task
// ids stay in topological order; every later task is renumbered.
#include <algorithm>
#include <map>

#include "common/error.h"
#include "compiler/passes/pass.h"

namespace of::compiler {

namespace {

template <typename DeviceOf>
bool is_remote_copy(const TaskGraph& tg, const Task& t, const DeviceOf& device_of) {
  if (t.kind != TaskKind::compute || t.kernel != "copy" || t.in_regsts.size() != 1 || t.inputs.size() != 1) return false;
  const Regst& from = tg.regsts[size_t(t.in_regsts[0])];
  const Regst& to = tg.regsts[size_t(t.out_regsts[0])];
  const plan::Blob& read = from.blobs[size_t(t.inputs[0].blob)];
  return device_of(from.id) != t.device && !from.persistent && !to.persistent && to.acts_per_piece == 1 && to.blobs.size() == 1 &&
         read.desc.shape == to.blobs[0].desc.shape && read.desc.dtype == to.blobs[0].desc.dtype;
}

}  // namespace

bool InsertTransfers::run(Compilation& c) {
  TaskGraph& tg = c.tasks;
  std::vector<int32_t> arena_of_device(tg.devices.size(), -1);
  for (const Arena& a : tg.arenas) arena_of_device[size_t(a.device)] = a.id;
  auto device_of = [&](RegstId r) { return tg.arenas[size_t(tg.regsts[size_t(r)].arena)].device; };

  const size_t original_regsts = tg.regsts.size();
  std::vector<Task> tasks;
  std::vector<TaskId> renamed(tg.tasks.size(), -1);
  std::map<std::pair<RegstId, int32_t>, RegstId> mirror;  // (register, reading device) -> its mirror
  // (register, reading device) -> the blobs readers there read: what a mirror must carry.
  std::map<std::pair<RegstId, int32_t>, std::vector<uint8_t>> wanted;
  auto rank_of = [&](RegstId r) { return tg.devices[size_t(device_of(r))].rank; };
  for (const Task& t : tg.tasks) {
    if (t.kind == TaskKind::snapshot || is_remote_copy(tg, t, device_of)) continue;
    // A collective task reads its rank's registers in place; one of another rank only paces it.
    if (t.kind == TaskKind::collective) {
      for (RegstId r : t.in_regsts)
        if (rank_of(r) != tg.devices[size_t(t.device)].rank) wanted[{r, t.device}].resize(tg.regsts[size_t(r)].blobs.size(), 0);
      continue;
    }
    for (RegstId r : t.in_regsts)
      if (device_of(r) != t.device && !tg.regsts[size_t(r)].persistent) wanted[{r, t.device}].resize(tg.regsts[size_t(r)].blobs.size(), 0);
    for (const TaskInput& in : t.inputs)
      if (in.kind == InputKind::regst && device_of(in.id) != t.device && !tg.regsts[size_t(in.id)].persistent)
        wanted[{in.id, t.device}][size_t(in.blob)] = 1;
  }
  bool changed = false;
  for (Task& t : tg.tasks) {
    for (const TaskInput& in : t.inputs)
      OF_ASSERT(in.kind != InputKind::variable || tg.variables[size_t(in.id)].arena == arena_of_device[size_t(t.device)],
                "task '" + t.name + "' reads a constant held by another device");
    // A copy that boxing placed on this device, of one tensor of another device's register, is a
    // transfer already: it becomes one instead of gaining a mirror to copy from.
    if (is_remote_copy(tg, t, device_of)) {
      t.kind = TaskKind::transfer;
      t.kernel.clear();
      t.attrs = {};
      changed = true;
    } else if (t.kind != TaskKind::snapshot) {
      for (RegstId& r : t.in_regsts) {
        if (device_of(r) == t.device) continue;
        const Regst& from = tg.regsts[size_t(r)];
        // A collective's reads stay where they are: boxing made it only where every source is on
        // its rank. A register of another rank only paces it (the source's, for a gather of
        // weights): that gets a mirror that carries nothing, as any reader's pacing register does.
        if (t.kind == TaskKind::collective) {
          if (rank_of(r) == tg.devices[size_t(t.device)].rank) continue;
          OF_ASSERT(std::none_of(t.inputs.begin(), t.inputs.end(), [&](const TaskInput& in) { return in.kind == InputKind::regst && in.id == r; }),
                    "collective task '" + t.name + "' reads a register of another rank");
        }
        // A weight (persistent register) read on another device stays a direct read: a transfer
        // would have to carry its versions. One process only, until ranks need it (issue 12).
        if (from.persistent) continue;
        auto [it, fresh] = mirror.try_emplace({r, t.device}, RegstId(tg.regsts.size()));
        const std::vector<uint8_t>& carried = wanted.at({r, t.device});
        if (fresh) {
          const Task& producer = tasks[size_t(renamed[size_t(from.producer)])];
          Task x{.id = TaskId(tasks.size()), .kind = TaskKind::transfer,
                 .name = fmt::format("{}/transfer/d{}", producer.name, t.device), .op = "Transfer", .device = t.device};
          x.stage = t.stage;
          x.in_regsts = {r};
          Regst m = from;  // the carried blobs, laid out afresh in the reader's arena
          m.id = it->second;
          m.producer = x.id;
          m.arena = arena_of_device[size_t(t.device)];
          m.consumers.clear();
          m.acts_per_piece = 1;  // one piece is one transfer, however many acts filled the original
          m.blobs.clear();
          uint64_t offset = 0;
          for (size_t b = 0; b < from.blobs.size(); ++b) {
            if (!carried[b]) continue;
            x.inputs.push_back(TaskInput{.kind = InputKind::regst, .id = r, .blob = int32_t(b)});
            plan::Blob blob = from.blobs[b];
            blob.offset = offset;
            offset = add_aligned(offset, blob.bytes);
            m.blobs.push_back(blob);
          }
          m.slot_bytes = std::max<uint64_t>(offset, kAlignment);  // a zero-byte register still gets a slot per piece
          x.out_regsts = {m.id};
          tg.regsts.push_back(std::move(m));
          tasks.push_back(std::move(x));
        }
        // Blob b of the original is blob (carried blobs before b) of the mirror.
        for (TaskInput& in : t.inputs)
          if (in.kind == InputKind::regst && in.id == r) {
            in.blob = int32_t(std::count(carried.begin(), carried.begin() + in.blob, uint8_t(1)));
            in.id = it->second;
          }
        r = it->second;
        changed = true;
      }
    }
    renamed[size_t(t.id)] = TaskId(tasks.size());
    t.id = TaskId(tasks.size());
    tasks.push_back(std::move(t));
  }
  tg.tasks = std::move(tasks);
  if (!changed) return false;  // ids are as they were

  // Producers by their new ids (mirrors were made with theirs); consumers again from the readers,
  // in task order as lowering listed them.
  for (size_t r = 0; r < tg.regsts.size(); ++r) {
    Regst& regst = tg.regsts[r];
    regst.consumers.clear();
    if (r < original_regsts) regst.producer = renamed[size_t(regst.producer)];
  }
  for (const Task& t : tg.tasks)
    for (RegstId r : t.in_regsts) tg.regsts[size_t(r)].consumers.push_back(t.id);
  return true;
}

}  // namespace of::compiler
