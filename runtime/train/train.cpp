// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/train.h"

#include <csignal>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_util.h"
#include "common/ignore_index.h"
#include "common/output_paths.h"
#include "runtime/data/dataset.h"
#include "runtime/data/sampler.h"
#include "runtime/memory/heap_peak.h"
#include "runtime/plan_instance.h"
#include "runtime/run.h"
#include "runtime/train/background_save.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_dir.h"
#include "runtime/train/data_source.h"
#include "runtime/train/eval_sink.h"
#include "runtime/train/progress.h"
#include "runtime/train/snapshot_action.h"
#include "runtime/stream.h"
#include "runtime/thread_counts.h"
#include "runtime/transport/routes.h"

namespace of::runtime::train {
namespace {

std::atomic<bool> g_interrupt{false};
std::atomic<int> g_signal{0};
// A trace keeps the first pieces of a run: enough to see a step's critical path, bounded memory.
constexpr int64_t kMaxTracedPieces = 10000;
extern "C" void on_interrupt(int sig) {
  g_signal.store(sig, std::memory_order_relaxed);
  g_interrupt.store(true, std::memory_order_relaxed);
}

// SIGINT, SIGTERM and SIGHUP end the stream at the next step boundary (then the run saves a
// checkpoint and ofrun exits 128 + the signal, as shells expect); a second signal gets the
// default action, so a stuck run can still be stopped.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupt.store(false);
    g_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~InterruptGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

// The files a --data spec reads ("npy:a.npy,b.npy", "tokens:f,dtype=u16", "idx:DIR": its files).
std::vector<std::string> data_files(const std::string& spec) {
  std::vector<std::string> out;
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return out;
  std::string rest = spec.substr(colon + 1);
  for (size_t at = 0; at <= rest.size();) {
    size_t end = rest.find(',', at);
    if (end == std::string::npos) end = rest.size();
    const std::string part = rest.substr(at, end - at);
    if (!part.empty() && part.find('=') == std::string::npos) out.push_back(part);
    at = end + 1;
  }
  std::vector<std::string> files;
  for (const std::string& f : out) {
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(f, ec))
        if (e.is_regular_file(ec)) files.push_back(e.path().string());
    } else {
      files.push_back(f);
    }
  }
  return files;
}

// The plan's batch: the label as the plan's job names it and the features as the one input left
// (besides the step scalars), each as the whole tensor of one piece, whichever sources hold them.
struct BatchInputs {
  std::string features, labels;
  TensorDesc features_desc, labels_desc;
};

BatchInputs batch_inputs(const PlanInstance& inst) {
  const std::string& label = inst.plan().job.label;
  BatchInputs b;
  std::vector<std::string> others;
  for (const plan::Task* src : inst.sources())
    for (size_t i = 0; i < src->io_names.size(); ++i) {
      const std::string& n = src->io_names[i];
      if (n == "train/lr" || n == "train/step") continue;
      const TensorDesc whole = inst.source_box(*src, i).whole;
      if (n == label) {
        b.labels = n;
        b.labels_desc = whole;
      } else if (std::find(others.begin(), others.end(), n) == others.end()) {
        others.push_back(n);
        b.features = n;
        b.features_desc = whole;
      }
    }
  if (b.labels.empty()) fail({.file = inst.path(), .field = "job.label"}, "'{}' is not an input of the plan", label);
  if (others.size() != 1)
    fail({.file = inst.path()}, "--data feeds a model with one input besides the label; this one has {} ({})", others.size(), fmt::join(others, ", "));
  return b;
}

// Which blob of source `src` is what, and which bytes of the batch's features and labels it holds.
SourceLayout layout_of(const PlanInstance& inst, const plan::Task& src, const BatchInputs& batch) {
  SourceLayout l;
  for (size_t i = 0; i < src.io_names.size(); ++i) {
    const std::string& n = src.io_names[i];
    const PlanInstance::SourceBox box = inst.source_box(src, i);
    if (n == "train/lr") l.lr = int(i);
    else if (n == "train/step") l.step = int(i);
    else if (n == batch.labels) {
      l.labels = int(i);
      l.labels_begin = box.begin;
      l.labels_bytes = box.bytes;
    } else {
      l.features = int(i);
      l.features_begin = box.begin;
      l.features_bytes = box.bytes;
    }
  }
  return l;
}

// The number of classes of a cross-entropy plan (labels are checked against it when the data
// is opened), or 0.
int64_t classes_of(const PlanInstance& inst) {
  for (const plan::Task& t : inst.plan().tasks)
    if (t.kernel == "softmax_cross_entropy" || t.kernel == "classify_metrics") {
      const TensorDesc d = inst.input_desc(t, 0);
      return d.shape.size() == 2 ? d.shape[1] : 0;
    }
  return 0;
}

// The label a cross-entropy plan ignores (its ignore_index, or torch's default).
int64_t ignored_label_of(const PlanInstance& inst) {
  for (const plan::Task& t : inst.plan().tasks)
    if (t.kernel == "softmax_cross_entropy" || t.kernel == "classify_metrics") return t.attrs.get_int("ignore_index", kDefaultIgnoreIndex);
  return kDefaultIgnoreIndex;
}

// What make_dataset needs to know of the plan: classes bound the labels (but for the ignored one); a token file's sample is
// as long as the model's input row, and its tokens (inputs and labels) are bounded by the classes.
// A token file gives one label per input token: a model whose label input is another size
// (logits [batch, seq, vocab] take their classes from axis 1, as F.cross_entropy does) is refused
// with what an LM's output must be, before the tokens are checked against a wrong vocabulary.
data::DataOptions data_options(const PlanInstance& inst, const BatchInputs& b, const std::string& spec) {
  const plan::Plan& p = inst.plan();
  if (spec.rfind("tokens:", 0) == 0 && b.labels_desc.shape != b.features_desc.shape &&
      numel(b.labels_desc.shape) != numel(b.features_desc.shape))
    fail({.file = spec}, "a token file gives one label per input token ({} a batch), but the model's label input '{}' is {} {}: a "
         "language model's logits must be [batch*seq, vocab], as F.cross_entropy wants them (return logits.reshape(-1, vocab))",
         shape_str(b.features_desc.shape), b.labels, dtype_name(b.labels_desc.dtype), shape_str(b.labels_desc.shape));
  const int64_t classes = classes_of(inst);
  return data::DataOptions{.seq = p.job.batch > 0 ? numel(b.features_desc.shape) / p.job.batch : 0, .vocab = classes, .num_classes = classes,
                           .ignore_label = ignored_label_of(inst)};
}

void check_data_fits(const PlanInstance& inst, const BatchInputs& b, const data::Dataset& d, const std::string& spec) {
  const int64_t batch = inst.plan().job.batch;
  auto check = [&](const TensorDesc& want, const std::string& name, const TensorDesc& sample, const char* what) {
    if (want.dtype != sample.dtype || numel(want.shape) != batch * numel(sample.shape))
      fail({.file = spec}, "a sample's {} are {} {}, but the model's input '{}' is {} {}, which is not {} such samples", what,
           dtype_name(sample.dtype), shape_str(sample.shape), name, dtype_name(want.dtype), shape_str(want.shape), batch);
  };
  check(b.features_desc, b.features, d.features(), "features");
  check(b.labels_desc, b.labels, d.labels(), "labels");
}

// One data source action per source task, each with its layout (the config's is replaced).
SourceMaker data_sources(const PlanInstance& inst, const BatchInputs& batch, const DataSourceConfig& config) {
  return [&inst, batch, config](const plan::Task& src) {
    DataSourceConfig c = config;
    c.layout = layout_of(inst, src, batch);
    // Only the lead source stops a run early; the others follow its pieces.
    if (src.id != inst.source().id) c.interrupt = nullptr;
    return std::make_unique<DataSourceAction>(c);
  };
}

ThreadCounts threads_for(const PlanInstance& inst, const TrainOptions& o) {
  return thread_counts(inst.plan(), true, o.rank, o.threads, o.kernel_threads, usable_cores());
}

// Training and evaluation stream through ofrun's one entry (runtime/stream.h).
double stream(const PlanInstance& inst, std::vector<std::unique_ptr<Action>>& actions, int64_t pieces, const TrainOptions& o,
              const std::string& trace_path = {}, std::atomic<bool>* failed = nullptr) {
  return runtime::stream(inst, actions, pieces,
                         StreamOptions{.threads = threads_for(inst, o).workers, .policy = o.policy, .stall_seconds = o.stall_seconds, .slot_limit = 0,
                                       .trace_path = trace_path, .trace_pieces = kMaxTracedPieces, .memory_report = o.memory_report,
                                       .late_threads = o.late_threads, .emulate_gpus = o.emulate_gpus, .boot = o.boot,
                                       .failed = failed})
      .seconds;
}

// A resumed run appends to its metrics file; the lines of steps after the checkpoint (written
// before a kill) are dropped first, so that every step appears once.
void keep_metrics_through(const std::string& path, int64_t step) {
  if (!std::filesystem::exists(path)) return;
  std::vector<uint8_t> bytes = read_file(path);
  std::string kept;
  size_t at = 0;
  while (at < bytes.size()) {
    size_t end = at;
    while (end < bytes.size() && bytes[end] != '\n') ++end;
    std::string line(bytes.begin() + long(at), bytes.begin() + long(end));
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() <= step)
      kept += line + "\n";
    at = end + 1;
  }
  if (kept.size() != bytes.size()) write_file_atomic(path, kept.data(), kept.size());
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }  // unique_ptr never passes null
};

// A snapshot action that never saves: the plan's snapshot task still needs one to pace.
class NoSnapshot final : public Action {
 public:
  void act(int64_t, const void* const*, void* const*) override {}
};

std::string eval_spec(const TrainOptions& o) {
  if (!o.eval_data.empty()) return o.eval_data;
  // IDX folders hold both splits: evaluate on the test split unless one was named.
  if (o.data.rfind("idx:", 0) == 0 && o.data.find(",split=") == std::string::npos) return o.data + ",split=test";
  return o.data;
}

// The weights an evaluation starts from.
struct WeightSource {
  const PlanInstance* trained = nullptr;     // the training run that just ended
  const LoadedCheckpoint* checkpoint = nullptr;
  const SafetensorsFile* init = nullptr;     // --init
  std::string init_path;
};

// `dataset`: the evaluation data opened before training (so that a missing split fails before
// the steps are spent), or null to open it here.
EvalReport evaluate(PlanInstance& train_plan, const WeightSource& from, const TrainOptions& o,
                    std::unique_ptr<data::Dataset> dataset = nullptr) {
  const plan::Plan& tp = train_plan.plan();
  if (tp.job.eval_plan.empty()) fail({.file = o.plan_path, .field = "job.eval_plan"}, "the plan has no evaluation plan");
  const std::string path = (std::filesystem::path(o.plan_path).parent_path() / tp.job.eval_plan).string();
  // The trained weights, whole, on the host; then a training plan on GPUs frees their memory
  // before the evaluation plan allocates its own (both at once may not fit).
  std::vector<std::pair<const StoredTensor*, std::vector<uint8_t>>> trained;
  if (from.trained)
    for (const StoredTensor& t : from.trained->stored())
      if (t.weight) t.gather(trained.emplace_back(&t, std::vector<uint8_t>(t.bytes)).second.data());
  train_plan.free_gpu_memory();  // it runs no more
  PlanInstance ev(path, -1, false, o.emulate_gpus);
  if (ev.plan().job.kind != plan::JobKind::eval) fail({.file = path, .field = "job.kind"}, "is not an evaluation plan");
  if (from.trained) {
    for (const StoredTensor& e : ev.stored()) {
      for (const auto& [t, whole] : trained) {
        if (t->key != e.key) continue;
        if (t->desc.dtype != e.desc.dtype || t->desc.shape != e.desc.shape)
          fail({.file = path, .field = "tensor '" + e.key + "'"}, "is {} here but {} in the training plan", shape_str(e.desc.shape), shape_str(t->desc.shape));
        e.scatter(whole.data());
      }
    }
  } else if (from.checkpoint) {
    ev.load_tensors(from.checkpoint->model, from.checkpoint->model_path, PlanInstance::Which::all, false);
  } else if (from.init) {
    ev.load_tensors(*from.init, from.init_path, PlanInstance::Which::all, false);
  }

  const std::string spec = eval_spec(o);
  const BatchInputs inputs = batch_inputs(ev);
  if (!dataset) dataset = data::make_dataset(spec, data_options(ev, inputs, spec));
  check_data_fits(ev, inputs, *dataset, spec);
  const int64_t batch = ev.plan().job.batch;
  const plan::Task& sink = ev.sink();
  const bool per_sample = sink.io_names.size() == 3 && sink.io_names[0] == "eval/nll" && sink.io_names[1] == "eval/correct" &&
                          sink.io_names[2] == "eval/count";
  // Per-sample metrics let a padded last batch count only its real rows; a mean loss cannot.
  data::EpochSampler sampler(dataset->size(), batch, 0, /*drop_last=*/!per_sample, /*shuffle=*/false);
  const int64_t pieces = sampler.batches_per_epoch();
  const int64_t samples = per_sample ? dataset->size() : pieces * batch;
  DataSourceConfig sc{.dataset = dataset.get(), .sampler = &sampler, .layout = {}, .batch = batch, .first_piece = 0,
                      .pieces_per_epoch = pieces, .micro_batches = 1, .schedule = LrSchedule::parse("constant", 0),
                      .total_steps = 1, .interrupt = nullptr};
  auto sink_action = std::make_unique<EvalSinkAction>(per_sample, batch, samples);
  EvalSinkAction* result = sink_action.get();
  auto actions = actions_for(ev, data_sources(ev, inputs, sc), std::move(sink_action), [](const plan::Task&) { return std::make_unique<NoSnapshot>(); }, threads_for(ev, o).kernel, gemm_backend(o.gemm));
  EvalReport r;
  r.seconds = stream(ev, actions, pieces, o);
  r.samples = result->counted();
  r.loss = result->mean_loss();
  r.accuracy = per_sample ? result->accuracy() : -1;
  return r;
}

void check_resumable(const LoadedCheckpoint& c, const plan::Plan& p, const TrainOptions& o) {
  const std::string state = c.folder + "/state.json";
  if (c.state.batch != p.job.batch) fail({.file = state, .field = "batch"}, "{} differs from the plan's batch {}", c.state.batch, p.job.batch);
  if (c.state.micro_batches != p.job.micro_batches)
    fail({.file = state, .field = "micro_batches"}, "{} differs from the plan's {}", c.state.micro_batches, p.job.micro_batches);
  if (o.seed && *o.seed != c.state.seed)
    fail({.file = state, .field = "seed"}, "{} differs from --seed {}: resuming with another shuffle would not continue the run", c.state.seed, *o.seed);
  if (c.state.data != o.data)
    fmt::print(stderr, "ofrun: warning: the checkpoint was trained on --data {}, resuming on {}\n", c.state.data, o.data);
}

}  // namespace

Report run_training(const TrainOptions& o) {
  PlanInstance inst(o.plan_path, o.rank, o.memory_report, o.emulate_gpus);
  const plan::Plan& p = inst.plan();
  // In a multi-process run each rank does its tasks' part: the sink's rank logs and writes
  // metrics, each rank with a snapshot task writes its shard of every checkpoint, and the first
  // snapshot's rank holds the checkpoint folder, commits each checkpoint and evaluates.
  const bool logs = inst.runs(inst.sink());
  const std::vector<const plan::Task*>& snapshot_tasks = inst.snapshots();
  const bool commits = snapshot_tasks.empty() ? inst.rank() <= 0 : inst.runs(*snapshot_tasks[0]);
  const bool saves = commits || std::any_of(snapshot_tasks.begin(), snapshot_tasks.end(), [&](const plan::Task* t) { return inst.runs(*t); });
  // Evaluating after training needs every weight: a rank of a sharded run reads them back from
  // the checkpoint its run just committed.
  const bool eval_from_checkpoint = inst.rank() >= 0 && snapshot_tasks.size() > 1;
  if (o.train && o.eval && eval_from_checkpoint && o.checkpoint_dir.empty())
    fail({.field = "--eval"}, "after training on {} ranks reads the trained weights from the checkpoint: give --checkpoint DIR",
         transport::plan_ranks(p));
  if (inst.rank() >= 0 && !o.train) fail({}, "evaluation alone runs in one process: drop --rank/--world/--launch-local");
  if (p.job.kind != plan::JobKind::train)
    fail({.file = o.plan_path}, "is not a training plan (compile with ofc --train; feed inference plans with --input)");
  if (o.epochs < 0 || o.steps < 0) fail({}, "--epochs and --steps must be positive");
  if (o.epochs > 0 && o.steps > 0) fail({}, "give --epochs or --steps, not both");
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty()) fail({}, "--checkpoint-every needs --checkpoint DIR");
  if (o.resume && o.checkpoint_dir.empty()) fail({}, "--resume needs --checkpoint DIR");

  if (o.overwrite && o.resume) fail({}, "--overwrite starts over and --resume continues: choose one");
  if (o.overwrite && o.checkpoint_dir.empty()) fail({}, "--overwrite needs --checkpoint DIR");

  // Everything the run will need is checked before its first step: no output is an input, each
  // output can be written, the checkpoint folder is this run's alone and has room for a save.
  std::vector<NamedPath> inputs{{o.plan_path, "the plan"}, {o.init_path, "--init"}};
  if (!p.weights.empty()) inputs.push_back({(std::filesystem::path(o.plan_path).parent_path() / p.weights).string(), "the plan's weights"});
  if (!p.job.eval_plan.empty())
    inputs.push_back({(std::filesystem::path(o.plan_path).parent_path() / p.job.eval_plan).string(), "the evaluation plan"});
  for (const std::string& f : data_files(o.data)) inputs.push_back({f, "--data"});
  if (o.eval)
    for (const std::string& f : data_files(eval_spec(o))) inputs.push_back({f, "the evaluation data"});
  refuse_outputs_over_inputs({{o.metrics_path, "--metrics"}, {o.trace_path, "--trace"}}, inputs);
  if (!o.metrics_path.empty() && o.train && logs) check_can_create(o.metrics_path, "--metrics");
  if (!o.trace_path.empty() && o.train) check_can_create(o.trace_path, "--trace");
  std::optional<CheckpointWriter> writer;
  if (o.train && !o.checkpoint_dir.empty() && commits) {
    writer.emplace(o.checkpoint_dir, o.resume, o.overwrite, o.keep_checkpoints);
    writer->check_space(checkpoint_bytes(inst));
  }

  std::optional<LoadedCheckpoint> ckpt;
  if ((o.resume || !o.train) && !o.checkpoint_dir.empty() && has_checkpoint(o.checkpoint_dir)) ckpt = load_latest_checkpoint(o.checkpoint_dir);
  std::optional<SafetensorsFile> init;
  if (!o.init_path.empty()) {
    if (ckpt) fail({.file = o.init_path}, "--init and a checkpoint to resume from ({}): choose one", ckpt->folder);
    init = read_safetensors(o.init_path);
    inst.load_tensors(*init, o.init_path, PlanInstance::Which::weights, true);
  }
  if (ckpt) {
    check_resumable(*ckpt, p, o);
    // Names and shapes are checked for both files before anything is copied.
    inst.load_tensors(ckpt->model, ckpt->model_path, PlanInstance::Which::weights, true);
    const SafetensorsFile& state = ckpt->optimizer;
    inst.load_tensors(state, ckpt->optimizer_path, PlanInstance::Which::persistent, false);
    for (const StoredTensor& t : inst.stored())
      if (t.persistent && !t.weight && !state.entries.count(t.key))
        fail({.file = ckpt->optimizer_path, .field = "tensor '" + t.key + "'"}, "missing (the plan {} needs it)", o.plan_path);
  }

  Report report;
  if (o.train) {
    const BatchInputs inputs = batch_inputs(inst);
    const uint64_t heap_before_data = o.memory_report ? heap_in_use() : 0;
    std::unique_ptr<data::Dataset> dataset = data::make_dataset(o.data, data_options(inst, inputs, o.data));
    check_data_fits(inst, inputs, *dataset, o.data);
    std::unique_ptr<data::Dataset> eval_dataset;
    if (o.eval) {
      eval_dataset = data::make_dataset(eval_spec(o), data_options(inst, inputs, eval_spec(o)));
      check_data_fits(inst, inputs, *eval_dataset, eval_spec(o));
    }
    if (o.memory_report) {
      const uint64_t now = heap_in_use();
      inst.set_heap_data(now - std::min(now, heap_before_data));
    }
    const int64_t batch = p.job.batch;
    const int32_t k = p.job.micro_batches;
    const uint64_t seed = ckpt ? ckpt->state.seed : o.seed.value_or(0);
    data::EpochSampler sampler(dataset->size(), batch, seed, !o.pad_last, o.shuffle);
    const int64_t pieces_per_epoch = sampler.batches_per_epoch() / k * k;
    if (pieces_per_epoch == 0)
      fail({.file = o.data}, "holds {} batches of {}, fewer than the {} micro-batches of one step", sampler.batches_per_epoch(), batch, k);
    const int64_t steps_per_epoch = pieces_per_epoch / k;
    TrainReport tr;
    tr.total_steps = o.steps > 0 ? o.steps : std::max<int64_t>(o.epochs, 1) * steps_per_epoch;
    tr.first_step = ckpt ? ckpt->state.step : 0;
    const int64_t pieces = std::max<int64_t>(tr.total_steps - tr.first_step, 0) * k;
    const LrSchedule schedule = LrSchedule::parse(p.job.schedule, p.job.lr);

    std::FILE* metrics = nullptr;
    const std::string metrics_path = logs ? o.metrics_path : std::string();
    if (!metrics_path.empty() && o.resume) keep_metrics_through(metrics_path, tr.first_step);
    const bool metrics_created = !metrics_path.empty() && (!o.resume || !std::filesystem::exists(metrics_path));
    if (!metrics_path.empty()) {
      // Appending: a resumed run continues the same file.
      metrics = std::fopen(o.metrics_path.c_str(), o.resume ? "a" : "w");
      if (!metrics) fail({.file = o.metrics_path}, "cannot open for writing: {}", std::strerror(errno));
      std::setvbuf(metrics, nullptr, _IOLBF, 1 << 16);
    }
    std::unique_ptr<std::FILE, FileCloser> metrics_guard(metrics);
    const int64_t log_every = !logs ? 0 : o.log_every >= 0 ? o.log_every : (metrics ? 1 : (o.live ? 0 : 100));

    CheckpointState base{.step = tr.first_step, .pieces = tr.first_step * k, .epoch = 0, .seed = seed, .micro_batches = k,
                         .batch = batch, .model = p.model, .data = o.data};
    DataSourceConfig sc{.dataset = dataset.get(), .sampler = &sampler, .layout = {}, .batch = batch,
                        .first_piece = tr.first_step * k, .pieces_per_epoch = pieces_per_epoch, .micro_batches = k,
                        .schedule = schedule, .total_steps = tr.total_steps, .interrupt = &g_interrupt};
    auto sink = std::make_unique<TrainSinkAction>(ProgressConfig{.first_piece = tr.first_step * k, .micro_batches = k, .batch = batch,
                                                                 .steps_per_epoch = steps_per_epoch, .total_steps = tr.total_steps,
                                                                 .log_every = log_every, .live = o.live, .metrics = metrics,
                                                                 .schedule = schedule, .stop = &g_interrupt});
    TrainSinkAction* progress = sink.get();
    // Declared before the actions: the snapshot actions point at them (and they outlive them).
    // One saver per snapshot task of this process: shard k is snapshot task k's.
    // A failure stops the savers' waits for other ranks' shards (which may never come).
    std::atomic<bool> run_failed{false};
    std::vector<std::unique_ptr<BackgroundSaver>> savers(snapshot_tasks.size());
    std::vector<SnapshotAction*> snapshots;
    auto make_snapshot = [&](const plan::Task& t) -> std::unique_ptr<Action> {
      const auto shard = int32_t(std::find(snapshot_tasks.begin(), snapshot_tasks.end(), &t) - snapshot_tasks.begin());
      if (!o.checkpoint_dir.empty())
        savers[size_t(shard)] = std::make_unique<BackgroundSaver>(o.checkpoint_dir, shard == 0 ? &*writer : nullptr, inst, shard, &run_failed);
      auto action = std::make_unique<SnapshotAction>(savers[size_t(shard)].get(), o.checkpoint_every, base, pieces_per_epoch);
      snapshots.push_back(action.get());
      return action;
    };
    auto actions = actions_for(inst, data_sources(inst, inputs, sc), std::move(sink), make_snapshot, threads_for(inst, o).kernel,
                               gemm_backend(o.gemm), kernels::RunCtx{.piece = tr.first_step * k, .seed = seed});
    {
      InterruptGuard guard;
      try {
        if (pieces > 0) tr.seconds = stream(inst, actions, pieces, o, o.trace_path, &run_failed);
      } catch (const Error& e) {
        // The rank that logs steps says how far the run got (the others cannot know).
        if (!logs || inst.rank() < 0) throw;
        fail({}, "{} (last completed step {})", e.what(), tr.first_step + progress->steps_done());
      }
      tr.interrupted = g_interrupt.load();
      tr.signal = g_signal.load();
    }
    tr.reported = logs;
    tr.predicted_step_seconds = inst.plan().prediction.step_seconds;
    if (logs) {
      progress->finish();
      tr.steps = progress->steps_done();
      tr.last_loss = progress->last_loss();
      tr.steady_step_seconds = progress->steady_step_seconds();
    } else if (saves && !snapshots.empty()) {
      tr.steps = (snapshots[0]->last_version() + 1) / k;  // it acted on every piece of the run
    } else {  // this rank ran neither the sink nor the snapshot: nothing to report or save
      report.train = tr;
      return report;
    }
    tr.samples = tr.steps * k * batch;
    // The final state, unless the last periodic save was of it already.
    // Every rank decides alike: each snapshot task acted on the same pieces.
    const bool saved_last = !snapshots.empty() && snapshots[0]->last_saved_step() == tr.first_step + tr.steps;
    if (!o.checkpoint_dir.empty() && tr.steps > 0 && !saved_last) {
      CheckpointState s = base;
      s.step = tr.first_step + tr.steps;
      s.pieces = s.step * k;
      s.epoch = s.pieces / pieces_per_epoch;
      for (auto& saver : savers)
        if (saver) saver->save(s);
    }
    for (auto& saver : savers) {
      if (!saver) continue;
      const std::string last = saver->finish();  // also reports a periodic save that failed
      if (tr.steps > 0 && saver.get() == savers[0].get()) tr.checkpoint = last;
    }
    if (logs && !progress->write_error().empty()) {
      metrics_guard.reset();
      // A metrics file this run created that holds not one whole line is no output at all.
      if (metrics_created) {
        const std::vector<uint8_t> bytes = read_file(o.metrics_path);
        if (std::find(bytes.begin(), bytes.end(), uint8_t('\n')) == bytes.end()) std::filesystem::remove(o.metrics_path);
      }
      fail({.file = o.metrics_path}, "cannot write: {} (stopped after step {}{})", progress->write_error(), tr.first_step + tr.steps,
           tr.checkpoint.empty() ? std::string() : ", checkpoint " + tr.checkpoint);
    }
    report.train = tr;
    // The training run's actions go before the evaluation: they hold its GPUs' streams, which
    // evaluate() frees to make room for the evaluation plan's.
    snapshots.clear();
    actions.clear();
    if (o.eval && !tr.interrupted && commits) {
      if (eval_from_checkpoint) {
        const LoadedCheckpoint trained = load_latest_checkpoint(o.checkpoint_dir);
        report.eval = evaluate(inst, WeightSource{.checkpoint = &trained}, o, std::move(eval_dataset));
      } else {
        report.eval = evaluate(inst, WeightSource{.trained = &inst}, o, std::move(eval_dataset));
      }
    }
  } else {
    WeightSource from{.trained = nullptr, .checkpoint = ckpt ? &*ckpt : nullptr, .init = init ? &*init : nullptr, .init_path = o.init_path};
    report.eval = evaluate(inst, from, o);
  }
  return report;
}

}  // namespace of::runtime::train
