// SPDX-License-Identifier: Apache-2.0
#include "runtime/run.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "common/error.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/safetensors.h"
#include "kernels/registry.h"
#include "runtime/actors/actions.h"
#include "runtime/actors/actor_system.h"
#include "runtime/plan/load.h"
#include "runtime/trace/chrome_trace.h"

namespace of::runtime {
namespace {

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using ArenaBuffer = std::unique_ptr<uint8_t, FreeDeleter>;

ArenaBuffer allocate_arena(uint64_t bytes, const std::string& path, int32_t id) {
  uint64_t size = std::max<uint64_t>(plan::align_up(bytes), plan::kAlignment);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(plan::kAlignment, size));
  if (!p) fail({.file = path, .field = fmt::format("arenas[{}]", id)}, "cannot allocate {} bytes", size);
  std::memset(p, 0, size);  // touch every page now, not in the first act
  return ArenaBuffer(p);
}

// Checks the weights file against the plan (size, checksum, every variable's entry) and copies
// each variable into its arena.
void load_weights(const plan::Plan& p, const std::string& plan_path, const std::vector<ArenaBuffer>& arenas) {
  std::string path = (std::filesystem::path(plan_path).parent_path() / p.weights).string();
  std::vector<uint8_t> bytes = read_file(path);
  if (bytes.size() != p.weights_bytes)
    fail({.file = path}, "weights file has {} bytes, the plan expects {} (was it replaced or truncated?)", bytes.size(), p.weights_bytes);
  if (crc32_of(bytes.data(), bytes.size()) != p.weights_crc32) fail({.file = path}, "weights checksum mismatch: the file is corrupt or belongs to another plan");
  SafetensorsFile file = parse_safetensors(bytes.data(), bytes.size(), path);
  for (const plan::Variable& v : p.variables) {
    auto it = file.entries.find(v.key);
    const TensorDesc& want = p.tensors[size_t(v.tensor)].desc;
    if (it == file.entries.end()) fail({.file = path, .field = "tensor '" + v.key + "'"}, "missing");
    if (it->second.dtype != want.dtype || it->second.shape != want.shape)
      fail({.file = path, .field = "tensor '" + v.key + "'"}, "is {} {}, the plan expects {} {}", dtype_name(it->second.dtype),
           shape_str(it->second.shape), dtype_name(want.dtype), shape_str(want.shape));
    std::memcpy(arenas[size_t(v.arena)].get() + v.offset, file.ptr(it->second), v.bytes);
  }
}

std::vector<TensorDesc> input_descs(const plan::Plan& p, const plan::Task& t) {
  std::vector<TensorDesc> out;
  for (const plan::TaskInput& in : t.inputs)
    out.push_back(in.variable ? p.tensors[size_t(p.variables[size_t(in.id)].tensor)].desc
                              : p.regsts[size_t(in.id)].blobs[size_t(in.blob)].desc);
  return out;
}

// How many pieces a fed array holds: its first dimension must be a multiple of the input's.
int64_t pieces_in(const NpyArray& a, const TensorDesc& want, const std::string& file, const std::string& name) {
  auto mismatch = [&] {
    fail({.file = file}, "array is {} {}, input '{}' needs {} {} (or k times as many rows)", dtype_name(a.dtype),
         shape_str(a.shape), name, dtype_name(want.dtype), shape_str(want.shape));
  };
  if (a.dtype != want.dtype || a.shape.size() != want.shape.size()) mismatch();
  if (want.shape.empty()) return 1;
  for (size_t d = 1; d < want.shape.size(); ++d)
    if (a.shape[d] != want.shape[d]) mismatch();
  if (want.shape[0] == 0 || a.shape[0] == 0 || a.shape[0] % want.shape[0] != 0) mismatch();
  return a.shape[0] / want.shape[0];
}

}  // namespace

RunResult run(const RunOptions& o) {
  plan::Plan p = load_plan(o.plan_path);
  if (o.slots < 0) fail({}, "--slots must be positive");
  int32_t max_slots = 0;
  for (const plan::Regst& r : p.regsts) max_slots = std::max(max_slots, r.slots);
  if (o.slots > max_slots)
    fail({.file = o.plan_path}, "--slots {} exceeds the {} slots the plan was compiled with (recompile with ofc --slots {})", o.slots, max_slots, o.slots);
  const int32_t slot_limit = o.slots > 0 ? o.slots : max_slots;

  std::vector<ArenaBuffer> arenas;
  for (const plan::Arena& a : p.arenas) arenas.push_back(allocate_arena(a.bytes, o.plan_path, a.id));
  std::vector<uint8_t*> arena_ptrs;
  for (const ArenaBuffer& a : arenas) arena_ptrs.push_back(a.get());
  load_weights(p, o.plan_path, arenas);

  const plan::Task* source = nullptr;
  const plan::Task* sink = nullptr;
  for (const plan::Task& t : p.tasks) {
    if (t.kind == plan::TaskKind::source) source = &t;
    if (t.kind == plan::TaskKind::sink) sink = &t;
  }

  // Feeds: every graph input needs exactly one --input.
  for (const auto& [name, file] : o.inputs)
    if (std::find(source->io_names.begin(), source->io_names.end(), name) == source->io_names.end())
      fail({.file = o.plan_path}, "--input '{}': the model has no input of that name (inputs: {})", name, fmt::join(source->io_names, ", "));
  const plan::Regst& source_regst = p.regsts[size_t(source->out_regsts[0])];
  std::vector<NpyArray> fed;
  std::vector<std::string> fed_files;
  std::vector<SourceAction::Feed> feeds;
  int64_t available = 0;
  for (size_t i = 0; i < source->io_names.size(); ++i) {
    const std::string& name = source->io_names[i];
    auto it = std::find_if(o.inputs.begin(), o.inputs.end(), [&](const auto& kv) { return kv.first == name; });
    if (it == o.inputs.end()) fail({.file = o.plan_path}, "input '{}' is not fed; pass --input {}=FILE.npy", name, name);
    fed.push_back(read_npy(it->second));
    fed_files.push_back(it->second);
    const plan::Blob& blob = source_regst.blobs[i];
    int64_t k = pieces_in(fed.back(), blob.desc, it->second, name);
    available = i == 0 ? k : std::min(available, k);
    feeds.push_back(SourceAction::Feed{nullptr, k, blob.bytes});
  }
  for (size_t i = 0; i < feeds.size(); ++i) feeds[i].data = fed[i].data.data();
  // Class labels fed to a cross-entropy loss must name a class: the kernel cannot report them.
  for (const plan::Task& t : p.tasks) {
    if (t.kernel != "softmax_cross_entropy" || t.inputs.size() != 2) continue;
    const plan::TaskInput& in = t.inputs[1];
    if (in.variable || in.id != source->out_regsts[0]) continue;
    const int64_t classes = input_descs(p, t)[0].shape.back();
    const NpyArray& labels = fed[size_t(in.blob)];
    const auto* v = reinterpret_cast<const int64_t*>(labels.data.data());
    for (size_t k = 0; k < labels.data.size() / 8; ++k)
      if (v[k] < 0 || v[k] >= classes)
        fail({.file = fed_files[size_t(in.blob)]}, "label {} at index {} is outside [0,{}) (the loss '{}' has {} classes)", v[k], k, classes, t.name, classes);
  }
  const int64_t pieces = o.pieces > 0 ? o.pieces : p.job.pieces > 0 ? p.job.pieces : available;
  // Collected outputs and trace records are sized by the piece count: refuse what cannot fit.
  const uint64_t memory = physical_memory();
  auto fits = [&](uint64_t per_piece) { return per_piece == 0 || uint64_t(pieces) <= memory / per_piece; };

  // Collected outputs: pieces concatenated along the first axis.
  std::vector<std::vector<uint8_t>> collected(sink->io_names.size());
  std::vector<SinkAction::Collect> collect;
  for (const auto& [name, file] : o.outputs)
    if (std::find(sink->io_names.begin(), sink->io_names.end(), name) == sink->io_names.end())
      fail({.file = o.plan_path}, "--output '{}': the model has no output of that name (outputs: {})", name, fmt::join(sink->io_names, ", "));
  for (size_t i = 0; i < sink->io_names.size(); ++i) {
    const plan::TaskInput& in = sink->inputs[i];
    uint64_t bytes = p.regsts[size_t(in.id)].blobs[size_t(in.blob)].bytes;
    bool wanted = std::any_of(o.outputs.begin(), o.outputs.end(), [&](const auto& kv) { return kv.first == sink->io_names[i]; });
    if (wanted && !fits(bytes))
      fail({.file = o.plan_path}, "--output {}: {} pieces of {} bytes exceed this machine's memory", sink->io_names[i], pieces, bytes);
    if (wanted) collected[i].resize(bytes * uint64_t(pieces));
    collect.push_back(SinkAction::Collect{wanted ? collected[i].data() : nullptr, pieces, bytes});
  }

  // Kernels are prepared (shapes checked, workspaces allocated) before anything runs.
  std::vector<std::unique_ptr<Action>> actions;
  for (const plan::Task& t : p.tasks) {
    switch (t.kind) {
      case plan::TaskKind::source: actions.push_back(std::make_unique<SourceAction>(feeds)); break;
      case plan::TaskKind::sink: actions.push_back(std::make_unique<SinkAction>(collect)); break;
      case plan::TaskKind::compute: {
        std::vector<TensorDesc> outs;
        for (const plan::Blob& b : p.regsts[size_t(t.out_regsts[0])].blobs) outs.push_back(b.desc);
        kernels::KernelConfig cfg{t.attrs, input_descs(p, t), outs, t.name};
        // Weights never change in an inference plan: kernels may repack them once, now.
        for (const plan::TaskInput& in : t.inputs) {
          const plan::Variable* v = in.variable ? &p.variables[size_t(in.id)] : nullptr;
          bool fixed = v && p.job.kind == plan::JobKind::infer;
          cfg.constants.push_back(fixed ? arena_ptrs[size_t(v->arena)] + v->offset : nullptr);
        }
        auto kernel = kernels::make_kernel(t.kernel, kernels::DeviceKind::cpu, outs[0].dtype, cfg);
        actions.push_back(std::make_unique<KernelAction>(std::move(kernel), o.kernel_threads));
        break;
      }
    }
  }
  if (!o.trace_path.empty() && !fits(sizeof(ActRecord) * p.tasks.size()))
    fail({.file = o.plan_path}, "--trace: {} pieces x {} tasks of records exceed this machine's memory", pieces, p.tasks.size());
  const int64_t trace_capacity = o.trace_path.empty() ? 0 : pieces;
  std::vector<std::unique_ptr<TaskState>> tasks;
  for (const plan::Task& t : p.tasks)
    tasks.push_back(std::make_unique<TaskState>(p, t.id, actions[size_t(t.id)].get(), arena_ptrs.data(), slot_limit, pieces, trace_capacity));

  ActorRunResult ran = run_actors(tasks, SchedulerOptions{o.threads, o.policy});
  if (!ran.error.empty()) fail({.file = o.plan_path}, "run failed: {}", ran.error);

  RunResult result{.pieces = pieces, .seconds = ran.seconds};
  for (const auto& t : tasks) result.acts += t->acts();
  for (const auto& [name, file] : o.outputs) {
    size_t i = size_t(std::find(sink->io_names.begin(), sink->io_names.end(), name) - sink->io_names.begin());
    const plan::TaskInput& in = sink->inputs[i];
    TensorDesc d = p.regsts[size_t(in.id)].blobs[size_t(in.blob)].desc;
    if (d.shape.empty()) d.shape = {pieces};
    else d.shape[0] *= pieces;
    write_npy(file, d.dtype, d.shape, collected[i].data());
  }
  if (!o.trace_path.empty()) write_chrome_trace(o.trace_path, p, tasks);
  return result;
}

}  // namespace of::runtime
