// SPDX-License-Identifier: Apache-2.0
#include "runtime/run.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "common/error.h"
#include "common/npy.h"
#include "runtime/actors/actions.h"
#include "runtime/plan/load.h"
#include "runtime/plan_instance.h"
#include "runtime/stream.h"
#include "runtime/thread_counts.h"

namespace of::runtime {
namespace {

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

kernels::GemmBackend gemm_backend(const std::string& name) {
  if (name == "onednn") return kernels::GemmBackend::onednn;
  if (name == "openblas") return kernels::GemmBackend::openblas;
  fail({}, "--gemm '{}' is not onednn or openblas", name);
}

RunResult run(const RunOptions& o) {
  PlanInstance inst(o.plan_path, o.rank, o.memory_report, o.emulate_gpus);
  const plan::Plan& p = inst.plan();
  if (p.job.kind == plan::JobKind::train)
    fail({.file = o.plan_path}, "is a training plan: give ofrun --data (and --epochs or --steps) to train it");
  if (o.slots < 0) fail({}, "--slots must be positive");
  int32_t max_slots = 0;
  for (const plan::Regst& r : p.regsts) max_slots = std::max(max_slots, r.slots);
  if (o.slots > max_slots)
    fail({.file = o.plan_path}, "--slots {} exceeds the {} slots the plan was compiled with (recompile with ofc --slots {})", o.slots, max_slots, o.slots);
  const int32_t slot_limit = o.slots > 0 ? o.slots : max_slots;

  const plan::Task* sink = &inst.sink();
  const bool collects_here = inst.runs(*sink);

  // Feeds: every graph input needs exactly one --input. In a plan of several ranks each rank's
  // source reads its rows of the arrays (PlanInstance::source_box), so each rank opens them.
  std::vector<std::string> input_names;
  std::vector<const plan::Task*> sources;
  for (const plan::Task* src : inst.sources()) {
    for (const std::string& n : src->io_names)
      if (std::find(input_names.begin(), input_names.end(), n) == input_names.end()) input_names.push_back(n);
    if (inst.runs(*src)) sources.push_back(src);
  }
  for (const auto& [name, file] : o.inputs)
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end())
      fail({.file = o.plan_path}, "--input '{}': the model has no input of that name (inputs: {})", name, fmt::join(input_names, ", "));
  struct Fed {
    NpyArray array;
    std::string file;
    TensorDesc whole;
    int64_t pieces = 0;
    uint64_t piece_bytes = 0;  // of the whole input
  };
  std::map<std::string, Fed> fed;
  int64_t available = 0;
  for (const plan::Task* src : sources)
    for (size_t i = 0; i < src->io_names.size(); ++i) {
      const std::string& name = src->io_names[i];
      const TensorDesc whole = inst.source_box(*src, i).whole;
      if (const auto known = fed.find(name); known != fed.end()) {
        // Sources on several devices read boxes of one input: all of the same whole.
        if (known->second.whole.shape != whole.shape || known->second.whole.dtype != whole.dtype)
          fail({.file = o.plan_path, .node = src->name}, "input '{}' is {} here and {} at another source", name, shape_str(whole.shape),
               shape_str(known->second.whole.shape));
        continue;
      }
      auto it = std::find_if(o.inputs.begin(), o.inputs.end(), [&](const auto& kv) { return kv.first == name; });
      if (it == o.inputs.end()) fail({.file = o.plan_path}, "input '{}' is not fed; pass --input {}=FILE.npy", name, name);
      Fed f{.array = read_npy(it->second, whole.dtype == DType::f32), .file = it->second, .whole = whole};  // numpy's default float64 read as f32
      if (f.array.from_f64)
        fmt::print(stderr, "ofrun: note: {}: float64 array converted to float32 for input '{}'\n", it->second, name);
      f.pieces = pieces_in(f.array, whole, it->second, name);
      f.piece_bytes = uint64_t(whole.bytes());
      available = fed.empty() ? f.pieces : std::min(available, f.pieces);
      fed.emplace(name, std::move(f));
    }
  // Class labels fed to a cross-entropy loss must name a class: the kernel cannot report them.
  for (const plan::Task& t : p.tasks) {
    if (t.kernel != "softmax_cross_entropy" || t.inputs.size() != 2) continue;
    const plan::TaskInput& in = t.inputs[1];
    if (in.kind != plan::InputKind::regst) continue;
    const plan::Task& producer = p.tasks[size_t(p.regsts[size_t(in.id)].producer)];
    if (producer.kind != plan::TaskKind::source) continue;
    const auto it = fed.find(producer.io_names[size_t(in.blob)]);
    if (it == fed.end()) continue;  // another rank's source
    const int64_t classes = inst.input_desc(t, 0).shape.back();
    const NpyArray& labels = it->second.array;
    const auto* v = reinterpret_cast<const int64_t*>(labels.data.data());
    for (size_t k = 0; k < labels.data.size() / 8; ++k)
      if (v[k] < 0 || v[k] >= classes)
        fail({.file = it->second.file}, "label {} at index {} is outside [0,{}) (the loss '{}' has {} classes)", v[k], k, classes, t.name, classes);
  }
  auto make_source = [&](const plan::Task& src) {
    std::vector<SourceAction::Feed> feeds;
    for (size_t i = 0; i < src.io_names.size(); ++i) {
      const Fed& f = fed.at(src.io_names[i]);
      const PlanInstance::SourceBox box = inst.source_box(src, i);
      feeds.push_back(SourceAction::Feed{.data = f.array.data.data(), .pieces = f.pieces, .piece_bytes = f.piece_bytes,
                                         .begin = box.begin, .bytes = box.bytes});
    }
    return std::make_unique<SourceAction>(std::move(feeds));
  };
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
    bool wanted = collects_here && std::any_of(o.outputs.begin(), o.outputs.end(), [&](const auto& kv) { return kv.first == sink->io_names[i]; });
    if (wanted && !fits(bytes))
      fail({.file = o.plan_path}, "--output {}: {} pieces of {} bytes exceed this machine's memory", sink->io_names[i], pieces, bytes);
    if (wanted) collected[i].resize(bytes * uint64_t(pieces));
    collect.push_back(SinkAction::Collect{wanted ? collected[i].data() : nullptr, pieces, bytes});
  }

  // Kernels are prepared (shapes checked, workspaces allocated) before anything runs.
  const ThreadCounts threads = thread_counts(p, false, o.rank, o.threads, o.kernel_threads, usable_cores());
  auto actions = actions_for(inst, make_source, std::make_unique<SinkAction>(collect), {},
                             threads.kernel, gemm_backend(o.gemm));
  if (!o.trace_path.empty() && !fits(sizeof(ActRecord) * p.tasks.size()))
    fail({.file = o.plan_path}, "--trace: {} pieces x {} tasks of records exceed this machine's memory", pieces, p.tasks.size());
  const StreamResult ran = stream(inst, actions, pieces,
                                  StreamOptions{.threads = threads.workers, .policy = o.policy, .stall_seconds = o.stall_seconds,
                                                .slot_limit = slot_limit, .trace_path = o.trace_path, .trace_pieces = pieces,
                                                .memory_report = o.memory_report, .late_threads = o.late_threads,
                                                .emulate_gpus = o.emulate_gpus, .boot = o.boot});

  RunResult result{.reported = collects_here, .pieces = pieces, .seconds = ran.seconds, .acts = ran.acts};
  for (const auto& [name, file] : o.outputs) {
    if (!collects_here) break;
    size_t i = size_t(std::find(sink->io_names.begin(), sink->io_names.end(), name) - sink->io_names.begin());
    const plan::TaskInput& in = sink->inputs[i];
    TensorDesc d = p.regsts[size_t(in.id)].blobs[size_t(in.blob)].desc;
    if (d.shape.empty()) d.shape = {pieces};
    else d.shape[0] *= pieces;
    write_npy(file, d.dtype, d.shape, collected[i].data());
  }
  return result;
}

}  // namespace of::runtime
