// SPDX-License-Identifier: Apache-2.0
// The semantic plan verifier. The compiler writes tasks in topological order (every streamed
// input register is produced by a task with a smaller id), and the verifier insists on it: that
// one rule excludes cycles among streamed registers. The only back edges allowed are persistent
// registers (weights): one slot, whose version 0 exists before anything acts, written by a task
// that reads no persistent register of its own as an input. A reader of piece n waits for
// version n, which needs only work on pieces < n, so by induction on n nothing waits forever.
#include "runtime/plan/load.h"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "common/file_util.h"
#include "kernels/registry.h"
#include "schemas/plan_codec.h"
#include "schemas/plan_format.h"
#include "schemas/shared_memory.h"

namespace of::runtime {
namespace {

constexpr int32_t kMaxSlots = 1024;

// Element count times element size, or fails when it overflows.
uint64_t checked_bytes(const TensorDesc& d, const Where& w) {
  uint64_t n = uint64_t(dtype_size(d.dtype));
  for (int64_t dim : d.shape) {
    if (dim < 0) fail(w, "negative dimension {}", dim);
    if (dim != 0 && n > std::numeric_limits<uint64_t>::max() / 4 / uint64_t(dim)) fail(w, "shape {} overflows", shape_str(d.shape));
    n *= uint64_t(dim);
  }
  return n;
}

bool inside(uint64_t offset, uint64_t bytes, uint64_t limit) { return offset <= limit && bytes <= limit - offset; }

template <class T>
bool distinct(std::vector<T> ids) {
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

// Locality: a task touches only its own device's arenas (compiler/passes/insert_transfers.cpp).
// A transfer task reads one register of another device; a collective task reads registers of
// other devices of its rank; any task may wait on a control register of its rank; a snapshot
// task reads the weights its rank checkpoints, on any of
// its rank's devices (and only its rank's: checked with the snapshot's other rules below).
template <typename At>
void refuse_foreign_memory(const plan::Plan& p, const plan::Task& t, const At& at) {
  auto device_of_arena = [&](int32_t arena) { return p.arenas[size_t(arena)].device; };
  const bool reads_anywhere = t.kind == plan::TaskKind::transfer || t.kind == plan::TaskKind::snapshot;
  for (size_t k = 0; k < t.in_regsts.size(); ++k) {
    const int32_t device = device_of_arena(p.regsts[size_t(t.in_regsts[k])].arena);
    // A collective task reads other devices' registers where they are, on its own rank only.
    if (t.kind == plan::TaskKind::collective) {
      if (p.devices[size_t(device)].rank != p.devices[size_t(t.device)].rank)
        fail(at(fmt::format("tasks[{}].in_regsts[{}]", t.id, k)), "register {} lives on rank {}, the collective task on rank {}: a collective task reads its own rank's devices only",
             t.in_regsts[k], p.devices[size_t(device)].rank, p.devices[size_t(t.device)].rank);
      continue;
    }
    // A control register carries no bytes: it may order a task after one of another device of
    // its rank (a share group's proxy waits for another device's collective part that reads a
    // register of the group in place: schemas/shared_memory.h).
    if (device != t.device && p.regsts[size_t(t.in_regsts[k])].blobs.empty()) {
      if (p.devices[size_t(device)].rank != p.devices[size_t(t.device)].rank)
        fail(at(fmt::format("tasks[{}].in_regsts[{}]", t.id, k)), "control register {} lives on rank {}, the task on rank {}: it orders tasks of one rank only",
             t.in_regsts[k], p.devices[size_t(device)].rank, p.devices[size_t(t.device)].rank);
      continue;
    }
    // Weights read on another device stay direct reads in one process (insert_transfers.cpp).
    if (!reads_anywhere && device != t.device && !p.regsts[size_t(t.in_regsts[k])].persistent)
      fail(at(fmt::format("tasks[{}].in_regsts[{}]", t.id, k)), "register {} lives on device {}, the task on device {}: only a transfer task reads another device", t.in_regsts[k], device, t.device);
    if (t.kind == plan::TaskKind::transfer && device == t.device)
      fail(at(fmt::format("tasks[{}].in_regsts[{}]", t.id, k)), "a transfer task reads a register of another device, not its own");
  }
  for (size_t k = 0; k < t.out_regsts.size(); ++k) {
    const int32_t device = device_of_arena(p.regsts[size_t(t.out_regsts[k])].arena);
    if (device != t.device)
      fail(at(fmt::format("tasks[{}].out_regsts[{}]", t.id, k)), "register {} lives on device {}, the task on device {}", t.out_regsts[k], device, t.device);
  }
  for (size_t k = 0; k < t.inputs.size(); ++k)
    if (t.inputs[k].kind == plan::InputKind::variable && device_of_arena(p.variables[size_t(t.inputs[k].id)].arena) != t.device)
      fail(at(fmt::format("tasks[{}].inputs[{}]", t.id, k)), "variable {} lives on another device than the task ({})", t.inputs[k].id, t.device);
}

}  // namespace

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : std::numeric_limits<uint64_t>::max();
}

void verify_plan(const plan::Plan& p, const std::string& path) {
  auto at = [&path](std::string field) { return Where{.file = path, .field = std::move(field)}; };
  const auto n_tasks = int32_t(p.tasks.size()), n_regsts = int32_t(p.regsts.size());
  const auto n_vars = int32_t(p.variables.size()), n_arenas = int32_t(p.arenas.size());
  if (p.devices.empty()) fail(at("cluster.devices"), "empty");
  for (size_t i = 0; i < p.devices.size(); ++i)
    if (p.devices[i].kind != 0 && p.devices[i].kind != 1) fail(at(fmt::format("cluster.devices[{}].kind", i)), "{} is neither cpu (0) nor cuda (1)", int(p.devices[i].kind));
  if (p.job.batch < 1) fail(at("job.batch"), "must be at least 1, is {}", p.job.batch);
  if (p.job.pieces < 0) fail(at("job.pieces"), "negative ({})", p.job.pieces);
  if (p.job.kind != plan::JobKind::infer && p.job.kind != plan::JobKind::train && p.job.kind != plan::JobKind::eval)
    fail(at("job.kind"), "unknown job kind {}", int(p.job.kind));
  if (p.job.micro_batches < 1 || p.job.micro_batches > 1 << 20) fail(at("job.micro_batches"), "{} is outside [1, 2^20]", p.job.micro_batches);
  if (!(p.job.lr >= 0) || p.job.lr > 1e6f) fail(at("job.lr"), "{} is not a learning rate", p.job.lr);
  if (p.version != plan_format::kVersion)
    fail(at("version"), "{} differs from the file header's version {}", p.version, plan_format::kVersion);

  const uint64_t memory = physical_memory();
  for (int32_t i = 0; i < n_arenas; ++i) {
    const plan::Arena& a = p.arenas[size_t(i)];
    if (a.id != i) fail(at(fmt::format("arenas[{}].id", i)), "is {}, expected {}", a.id, i);
    if (a.device < 0 || size_t(a.device) >= p.devices.size())
      fail(at(fmt::format("arenas[{}].device", i)), "{} out of range ({} devices)", a.device, p.devices.size());
    // A GPU's arena is in its own memory, which the loader does not know (ofrun checks it there).
    if (p.devices[size_t(a.device)].kind == 0 && a.bytes > memory) fail(at(fmt::format("arenas[{}].bytes", i)), "{} bytes exceed this machine's memory ({})", a.bytes, memory);
  }
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const plan::LogicalTensor& t = p.tensors[i];
    const std::string f = fmt::format("tensors[{}]", i);
    checked_bytes(t.desc, at(f + ".shape"));
    if (t.full_shape.empty() && t.shard_begin.empty()) continue;
    // A box of a whole tensor: weights are cut from and put back into the whole by these numbers.
    checked_bytes(TensorDesc{t.full_shape, t.desc.dtype}, at(f + ".full_shape"));
    if (t.full_shape.size() != t.desc.shape.size() || t.shard_begin.size() != t.desc.shape.size())
      fail(at(f + ".shard_begin"), "rank differs from the shape {} or full shape {}", shape_str(t.desc.shape), shape_str(t.full_shape));
    for (size_t k = 0; k < t.desc.shape.size(); ++k)
      if (t.shard_begin[k] < 0 || t.shard_begin[k] > t.full_shape[k] - t.desc.shape[k])
        fail(at(f + ".shard_begin"), "box {} at {} lies outside {}", shape_str(t.desc.shape), shape_str(t.shard_begin), shape_str(t.full_shape));
  }

  for (int32_t i = 0; i < n_regsts; ++i) {
    const plan::Regst& r = p.regsts[size_t(i)];
    std::string f = fmt::format("regsts[{}]", i);
    if (r.id != i) fail(at(f + ".id"), "is {}, expected {}", r.id, i);
    if (r.producer < 0 || r.producer >= n_tasks) fail(at(f + ".producer"), "task {} out of range ({} tasks)", r.producer, n_tasks);
    const auto& produced = p.tasks[size_t(r.producer)].out_regsts;
    if (std::find(produced.begin(), produced.end(), i) == produced.end())
      fail(at(f + ".producer"), "task {} does not list this register among its outputs", r.producer);
    if (!distinct(r.consumers)) fail(at(f + ".consumers"), "lists a task twice");
    if (r.arena < 0 || r.arena >= n_arenas) fail(at(f + ".arena"), "{} out of range ({} arenas)", r.arena, n_arenas);
    if (r.slots < 1 || r.slots > kMaxSlots) fail(at(f + ".slots"), "{} is outside [1, {}]", r.slots, kMaxSlots);
    if (r.persistent && r.slots != 1) fail(at(f + ".slots"), "a persistent register has one slot, not {}", r.slots);
    if (r.acts_per_piece < 1 || r.acts_per_piece > (1 << 20) || (r.persistent && r.acts_per_piece != 1))
      fail(at(f + ".acts_per_piece"), "{} is outside [1, 2^20] (1 for a persistent register)", r.acts_per_piece);
    if (r.pieces_per_version < 1 || r.pieces_per_version > (1 << 20) || (!r.persistent && r.pieces_per_version != 1))
      fail(at(f + ".pieces_per_version"), "{} is outside [1, 2^20] (1 for a streamed register)", r.pieces_per_version);
    if (r.persistent && p.tasks[size_t(r.producer)].kind != plan::TaskKind::compute && p.tasks[size_t(r.producer)].kind != plan::TaskKind::collective)
      fail(at(f + ".producer"), "a persistent register is written by a compute or collective task (its update, or the gather refreshing a replica)");
    if (r.offsets.size() != size_t(r.slots)) fail(at(f + ".offsets"), "has {} entries for {} slots", r.offsets.size(), r.slots);
    const uint64_t arena_bytes = p.arenas[size_t(r.arena)].bytes;
    for (size_t s = 0; s < r.offsets.size(); ++s)
      if (!inside(r.offsets[s], r.slot_bytes, arena_bytes))
        fail(at(fmt::format("{}.offsets[{}]", f, s)), "slot [{}, +{}) lies outside arena {} ({} bytes)", r.offsets[s], r.slot_bytes, r.arena, arena_bytes);
    for (size_t b = 0; b < r.blobs.size(); ++b) {
      const plan::Blob& blob = r.blobs[b];
      std::string bf = fmt::format("{}.blobs[{}]", f, b);
      if (blob.tensor < 0 || size_t(blob.tensor) >= p.tensors.size()) fail(at(bf + ".tensor"), "{} out of range", blob.tensor);
      if (checked_bytes(blob.desc, at(bf + ".shape")) != blob.bytes) fail(at(bf + ".bytes"), "{} does not match shape {}", blob.bytes, shape_str(blob.desc.shape));
      if (!inside(blob.offset, blob.bytes, r.slot_bytes)) fail(at(bf + ".offset"), "blob lies outside its slot ({} bytes)", r.slot_bytes);
      if (blob.offset % plan::kAlignment != 0) fail(at(bf + ".offset"), "{} is not {}-byte aligned", blob.offset, plan::kAlignment);
    }
    for (size_t s = 0; s < r.offsets.size(); ++s)
      if (r.offsets[s] % plan::kAlignment != 0) fail(at(fmt::format("{}.offsets[{}]", f, s)), "not {}-byte aligned", plan::kAlignment);
    for (size_t c = 0; c < r.consumers.size(); ++c) {
      int32_t t = r.consumers[c];
      if (t < 0 || t >= n_tasks) fail(at(fmt::format("{}.consumers[{}]", f, c)), "task {} out of range ({} tasks)", t, n_tasks);
      const auto& in = p.tasks[size_t(t)].in_regsts;
      if (std::find(in.begin(), in.end(), i) == in.end()) fail(at(fmt::format("{}.consumers[{}]", f, c)), "task {} does not read this register", t);
    }
  }
  for (int32_t i = 0; i < n_vars; ++i) {
    const plan::Variable& v = p.variables[size_t(i)];
    std::string f = fmt::format("variables[{}]", i);
    if (v.id != i) fail(at(f + ".id"), "is {}, expected {}", v.id, i);
    if (v.arena < 0 || v.arena >= n_arenas) fail(at(f + ".arena"), "{} out of range", v.arena);
    if (v.tensor < 0 || size_t(v.tensor) >= p.tensors.size()) fail(at(f + ".tensor"), "{} out of range", v.tensor);
    if (uint64_t(p.tensors[size_t(v.tensor)].desc.bytes()) != v.bytes) fail(at(f + ".bytes"), "{} does not match its tensor", v.bytes);
    if (!inside(v.offset, v.bytes, p.arenas[size_t(v.arena)].bytes)) fail(at(f + ".offset"), "lies outside arena {}", v.arena);
    if (v.offset % plan::kAlignment != 0) fail(at(f + ".offset"), "not {}-byte aligned", plan::kAlignment);
  }

  int leads = 0, sinks = 0;
  std::map<int32_t, int32_t> snapshot_of_rank;  // rank -> its snapshot task (a map: ranks are not checked here)
  // A box of a persistent tensor (name, where it begins, its shape) -> the snapshot that reads it.
  std::map<std::tuple<std::string, std::vector<int64_t>, Shape>, int32_t> checkpointed_by;
  for (int32_t i = 0; i < n_tasks; ++i) {
    const plan::Task& t = p.tasks[size_t(i)];
    std::string f = fmt::format("tasks[{}]", i);
    if (t.id != i) fail(at(f + ".id"), "is {}, expected {}", t.id, i);
    if (t.device < 0 || size_t(t.device) >= p.devices.size()) fail(at(f + ".device"), "out of range");
    if (t.stage < 0 || t.stage >= int32_t(p.devices.size())) fail(at(f + ".stage"), "{} out of range ({} devices)", t.stage, p.devices.size());
    if (!distinct(t.in_regsts)) fail(at(f + ".in_regsts"), "lists a register twice");
    if (!distinct(t.out_regsts)) fail(at(f + ".out_regsts"), "lists a register twice");
    for (size_t k = 0; k < t.in_regsts.size(); ++k) {
      int32_t r = t.in_regsts[k];
      if (r < 0 || r >= n_regsts) fail(at(fmt::format("{}.in_regsts[{}]", f, k)), "register {} out of range ({} registers)", r, n_regsts);
      if (!p.regsts[size_t(r)].persistent && p.regsts[size_t(r)].producer >= i) fail(at(fmt::format("{}.in_regsts[{}]", f, k)), "register {} is produced by task {}, not an earlier task (cycle)", r, p.regsts[size_t(r)].producer);
      const auto& cons = p.regsts[size_t(r)].consumers;
      if (std::find(cons.begin(), cons.end(), i) == cons.end()) fail(at(fmt::format("{}.in_regsts[{}]", f, k)), "register {} does not list this task as a consumer", r);
    }
    for (size_t k = 0; k < t.out_regsts.size(); ++k) {
      int32_t r = t.out_regsts[k];
      if (r < 0 || r >= n_regsts) fail(at(fmt::format("{}.out_regsts[{}]", f, k)), "register {} out of range ({} registers)", r, n_regsts);
      if (p.regsts[size_t(r)].producer != i) fail(at(fmt::format("{}.out_regsts[{}]", f, k)), "register {} names task {} as producer", r, p.regsts[size_t(r)].producer);
      if (std::find(t.in_regsts.begin(), t.in_regsts.end(), r) != t.in_regsts.end())
        fail(at(fmt::format("{}.out_regsts[{}]", f, k)), "register {} is also read by its producer (use an own input)", r);
    }
    bool streamed_input = false;
    for (int32_t r : t.in_regsts) streamed_input = streamed_input || !p.regsts[size_t(r)].persistent;
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      const plan::TaskInput& in = t.inputs[k];
      std::string inf = fmt::format("{}.inputs[{}]", f, k);
      if (in.kind == plan::InputKind::variable) {
        if (in.id < 0 || in.id >= n_vars) fail(at(inf), "variable {} out of range ({} variables)", in.id, n_vars);
      } else if (in.kind == plan::InputKind::own) {
        if (std::find(t.out_regsts.begin(), t.out_regsts.end(), in.id) == t.out_regsts.end()) fail(at(inf), "register {} is not among the task's out_regsts", in.id);
        if (!p.regsts[size_t(in.id)].persistent) fail(at(inf), "register {} is streamed; only a persistent register is updated in place", in.id);
        if (in.blob < 0 || size_t(in.blob) >= p.regsts[size_t(in.id)].blobs.size()) fail(at(inf), "blob {} out of range", in.blob);
      } else {
        if (std::find(t.in_regsts.begin(), t.in_regsts.end(), in.id) == t.in_regsts.end()) fail(at(inf), "register {} is not among the task's in_regsts", in.id);
        if (in.blob < 0 || size_t(in.blob) >= p.regsts[size_t(in.id)].blobs.size()) fail(at(inf), "blob {} out of range", in.blob);
      }
      if (!in.view.empty()) {
        if (in.kind != plan::InputKind::regst || (t.kind != plan::TaskKind::compute && t.kind != plan::TaskKind::collective))
          fail(at(inf + ".view"), "only a compute or collective task's register input may be read as a view");
        const Shape& shape = p.regsts[size_t(in.id)].blobs[size_t(in.blob)].desc.shape;
        int64_t elements = 1;
        for (int64_t d : in.view) {
          if (d < 0 || (d > 0 && elements > std::numeric_limits<int64_t>::max() / d)) fail(at(inf + ".view"), "dimension {} is negative or too large", d);
          elements *= d;
        }
        if (elements != numel(shape))
          fail(at(inf + ".view"), "[{}] has {} elements, its blob {} has {}", fmt::join(in.view, ","), elements, shape_str(shape), numel(shape));
      }
    }
    refuse_foreign_memory(p, t, at);
    switch (t.kind) {
      case plan::TaskKind::transfer: {
        if (t.in_regsts.size() != 1 || t.out_regsts.size() != 1) fail(at(f), "a transfer task reads one register and writes one");
        const plan::Regst& from = p.regsts[size_t(t.in_regsts[0])];
        const plan::Regst& to = p.regsts[size_t(t.out_regsts[0])];
        if (from.persistent || to.persistent) fail(at(f), "a transfer task moves streamed registers, not weights");
        if (to.acts_per_piece != 1) fail(at(f + ".out_regsts"), "a transfer writes one act per piece");
        // Input k (a tensor of the other device's register) is copied into output blob k.
        bool same = t.inputs.size() == to.blobs.size();
        for (size_t k = 0; same && k < t.inputs.size(); ++k) {
          same = t.inputs[k].kind == plan::InputKind::regst;  // its blob was checked against `from` above
          if (!same) break;
          const plan::Blob& read = from.blobs[size_t(t.inputs[k].blob)];
          same = read.bytes == to.blobs[k].bytes && read.desc.shape == to.blobs[k].desc.shape && read.desc.dtype == to.blobs[k].desc.dtype;
        }
        if (!same) fail(at(f), "a transfer task writes, blob by blob, the tensors it reads: its output register's blobs must match its inputs");
        break;
      }
      case plan::TaskKind::source:
        // The lead source reads nothing; a rank's source is paced by one register (the lead's,
        // or its mirror) and reads no tensor of it.
        if (!t.inputs.empty() || t.out_regsts.size() != 1 || t.in_regsts.size() > 1)
          fail(at(f), "a source task reads no tensor, is paced by at most one register and writes one register");
        if (t.in_regsts.empty()) ++leads;
        if (t.io_names.size() != p.regsts[size_t(t.out_regsts[0])].blobs.size()) fail(at(f + ".io_names"), "one name per source blob");
        // ofrun feeds inputs by name: one name for two blobs would feed one array to both.
        if (!distinct(t.io_names)) fail(at(f + ".io_names"), "names an input twice");
        break;
      case plan::TaskKind::sink:
        ++sinks;
        if (!t.out_regsts.empty()) fail(at(f), "a sink task writes nothing");
        for (size_t k = 0; k < t.inputs.size(); ++k)
          if (t.inputs[k].kind != plan::InputKind::regst) fail(at(fmt::format("{}.inputs[{}]", f, k)), "a sink collects registers, not variables");
        if (t.io_names.size() != t.inputs.size()) fail(at(f + ".io_names"), "one name per sink input");
        if (!distinct(t.io_names)) fail(at(f + ".io_names"), "names an output twice");
        if (!streamed_input) fail(at(f + ".in_regsts"), "a sink reads at least one streamed register");
        break;
      case plan::TaskKind::snapshot: {
        // Each rank checkpoints what it holds with at most one snapshot task, reading its own
        // rank's registers only, and each box of a tensor is read by one of them
        // (lower_to_tasks.cpp): the lowest rank reading a tensor writes it whole.
        const int32_t rank = p.devices[size_t(t.device)].rank;
        if (auto [it, fresh] = snapshot_of_rank.try_emplace(rank, i); !fresh)
          fail(at(f), "a second snapshot task on rank {} (task {} is one)", rank, it->second);
        if (!t.out_regsts.empty()) fail(at(f), "a snapshot task writes nothing");
        if (!streamed_input) fail(at(f + ".in_regsts"), "a snapshot task reads at least one streamed register (its pieces)");
        for (size_t k = 0; k < t.inputs.size(); ++k)
          if (t.inputs[k].kind != plan::InputKind::regst || !p.regsts[size_t(t.inputs[k].id)].persistent)
            fail(at(fmt::format("{}.inputs[{}]", f, k)), "a snapshot reads persistent registers only");
        for (size_t k = 0; k < t.inputs.size(); ++k) {
          const plan::Regst& r = p.regsts[size_t(t.inputs[k].id)];
          const int32_t of_rank = p.devices[size_t(p.arenas[size_t(r.arena)].device)].rank;
          if (of_rank != rank)
            fail(at(fmt::format("{}.inputs[{}]", f, k)), "register {} lives on rank {}: a snapshot task reads its own rank's registers (recompile the plan)",
                 r.id, of_rank);
          const plan::LogicalTensor& tensor = p.tensors[size_t(r.blobs[size_t(t.inputs[k].blob)].tensor)];
          auto [it, fresh] = checkpointed_by.try_emplace({tensor.name, tensor.shard_begin, tensor.desc.shape}, i);
          if (!fresh && it->second != i)
            fail(at(fmt::format("{}.inputs[{}]", f, k)), "a box of tensor '{}' is checkpointed by snapshot tasks {} and {}", tensor.name, it->second, i);
        }
        break;
      }
      case plan::TaskKind::compute:
      case plan::TaskKind::collective: {
        // Registers of data first: one, or its persistent state then one streamed; any others are
        // control registers (share groups' order).
        if (t.out_regsts.empty()) fail(at(f + ".out_regsts"), "a compute task writes one register of data");
        const size_t data = std::max<size_t>(plan::data_regsts(p, t), 1);
        if (data > 2 || (data == 2 && (!p.regsts[size_t(t.out_regsts[0])].persistent || p.regsts[size_t(t.out_regsts[1])].persistent)))
          fail(at(f + ".out_regsts"), "a compute task writing two registers of data writes its persistent state, then one streamed register");
        for (size_t k = data; k < t.out_regsts.size(); ++k)
          if (!p.regsts[size_t(t.out_regsts[k])].blobs.empty() || p.regsts[size_t(t.out_regsts[k])].slot_bytes != 0)
            fail(at(fmt::format("{}.out_regsts[{}]", f, k)), "a compute task writes one register of data (or its state and one); the others are control registers, without blobs");
        if (!streamed_input) fail(at(f + ".in_regsts"), "a compute task reads at least one streamed register (its pieces)");
        const auto& blobs = p.regsts[size_t(t.out_regsts[0])].blobs;
        if (blobs.empty()) fail(at(f + ".out_regsts"), "the output register has no blobs");
        DType dtype = blobs[0].desc.dtype;
        const bool cuda = p.devices[size_t(t.device)].kind != 0;
        if (!kernels::find_kernel(t.kernel, cuda ? kernels::DeviceKind::cuda : kernels::DeviceKind::cpu, dtype))
          fail(at(f + ".kernel"), "no kernel '{}' for {}:{}", t.kernel, cuda ? "cuda" : "cpu", dtype_name(dtype));
        break;
      }
    }
  }
  if (leads != 1 || sinks != 1)
    fail(at("tasks"), "needs exactly one source that reads nothing and one sink task (has {} and {})", leads, sinks);
  // Last: it reads the ids checked above.
  plan::check_shared_memory(p, path);
}

plan::Plan load_plan(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  // Half this machine's memory: the plan's copies (schemas/plan_copies.h) are expanded in memory.
  plan::Plan p = plan::decode(bytes.data(), bytes.size(), path, physical_memory() / 2);
  verify_plan(p, path);
  return p;
}

}  // namespace of::runtime
