// SPDX-License-Identifier: Apache-2.0
// ofrun: stream a plan on CPU actors. Inference plans take .npy inputs and write .npy outputs;
// training plans (ofc --train) take --data and train, checkpoint, resume and evaluate.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/cli_args.h"
#include "cli/cli_main.h"
#include "common/file_util.h"
#include "common/output_paths.h"
#include "common/machine_costs.h"
#include "runtime/calibrate.h"
#include "runtime/launch/launch_local.h"
#include "runtime/launch/rank_env.h"
#include "runtime/plan/load.h"
#include "runtime/run.h"
#include "runtime/train/train.h"
#include "runtime/transport/bootstrap.h"
#include "runtime/transport/routes.h"

namespace {

// "NAME=FILE" -> {NAME, FILE}
std::pair<std::string, std::string> split_binding(const std::string& s, const char* flag) {
  size_t eq = s.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == s.size())
    throw of::cli::UsageError(fmt::format("{} '{}' must look like NAME=FILE.npy", flag, s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

void print_report(const of::runtime::train::Report& r) {
  if (r.train && !r.train->reported) return;  // another rank runs the sink and reports
  if (r.train) {
    const auto& t = *r.train;
    if (t.steps == 0) {
      fmt::print("ofrun: already at step {} of {}: nothing to train\n", t.first_step, t.total_steps);
    } else {
      fmt::print("ofrun: trained {} steps ({} samples) in {:.3f} s, {:.1f} samples/s, last loss {:.6f}\n", t.steps, t.samples,
                 t.seconds, double(t.samples) / t.seconds, t.last_loss);
      // Measured: the mean of the steps after the first (start-up and warm-up left out).
      if (t.predicted_step_seconds > 0 && t.steady_step_seconds > 0)
        fmt::print("ofrun: step time predicted {:.3f} ms, measured {:.3f} ms\n", 1e3 * t.predicted_step_seconds, 1e3 * t.steady_step_seconds);
    }
    if (t.interrupted) fmt::print("ofrun: interrupted at step {}\n", t.first_step + t.steps);
    if (!t.checkpoint.empty()) fmt::print("ofrun: checkpoint {}\n", t.checkpoint);
  }
  if (r.eval) {
    const auto& e = *r.eval;
    if (e.accuracy >= 0)
      fmt::print("ofrun: eval {} samples, loss {:.6f}, accuracy {:.2f}%\n", e.samples, e.loss, 100.0 * e.accuracy);
    else
      fmt::print("ofrun: eval {} samples, loss {:.6f}\n", e.samples, e.loss);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ofrun: run an of plan"};
  of::runtime::RunOptions o;
  of::runtime::train::TrainOptions t;
  std::vector<std::string> inputs, outputs;
  std::string last_batch = "drop";
  uint64_t seed = 0;
  bool no_shuffle = false;
  app.add_option("plan", o.plan_path, "plan file written by ofc (with --calibrate: also measure its kernels on their shapes)");
  std::string calibrate_path;
  app.add_option("--calibrate", calibrate_path,
                 "measure this machine's kernels, copies and messages (a few seconds; with a plan, also that plan's kernels) into FILE for ofc --costs, and exit");
  bool merge = false;
  app.add_flag("--merge", merge,
               "with --calibrate and a plan: keep the kernels and shapes FILE holds from other plans, adding this plan's (one costs file for "
               "several plans; the machine's rates are measured again)");
  auto* input_opt = app.add_option("--input", inputs, "inference: feed a graph input: NAME=FILE.npy (k x batch rows stream as k pieces)");
  auto* output_opt = app.add_option("--output", outputs, "inference: write a graph output: NAME=FILE.npy (pieces concatenated)");
  auto* pieces_opt = app.add_option("--pieces", o.pieces, "inference: pieces to stream (inputs repeat as needed)")->check(of::cli::at_least(1));
  auto* slots_opt = app.add_option("--slots", o.slots, "inference: use at most this many slots per register")->check(of::cli::at_least(1));
  app.add_option("--threads", o.threads, "actor worker threads (default: one per core; 1 to train a plan of one CPU device, whose kernels then use every core)")->check(of::cli::at_least(1));
  app.add_option("--kernel-threads", o.kernel_threads, "threads each kernel may use (default: 1; every core to train a plan of one CPU device)")->check(of::cli::at_least(1));
  app.add_option("--scheduler", o.policy, "CAF scheduling policy")->check(CLI::IsMember({"sharing", "stealing"}));
  app.add_option("--gemm", o.gemm, "matrix products: onednn (fast) or openblas (PyTorch's summation order, to track it step for step)")
      ->check(CLI::IsMember({"onednn", "openblas"}));
  app.add_option("--stall-timeout", o.stall_seconds,
                 "fail a run in which no task does anything for this many seconds (default: wait forever; a kernel may be slow)")
      ->check(of::cli::positive());
  app.add_option("--late-completion", o.late_threads,
                 "testing: every kernel and copy completes after it returns, on N threads of a CPU test device (results must not change)")
      ->check(of::cli::at_least(1));
  app.add_flag("--emulate-gpus", o.emulate_gpus,
               "testing: run a plan for GPUs (ofc --devices N:cuda) on this CPU, each GPU a device whose kernels (their CPU twins) and "
               "copies complete late on a thread of its own, as on a stream (results must equal the CPU plan's)");
  app.add_flag("--memory-report", o.memory_report, "after the run, print how much of each device's arena it touched");
  app.add_option("--trace", o.trace_path, "write a Chrome-trace JSON of actor activity (training: the first 10000 pieces)");
  auto* data = app.add_option("--data", t.data, "training data: idx:DIR[,split=] | npy:FEATURES.npy,LABELS.npy | tokens:FILE[,dtype=]")
                   ->excludes(input_opt)->excludes(output_opt)->excludes(pieces_opt)->excludes(slots_opt);
  // Training and evaluation options mean nothing to an inference plan: each needs --data.
  app.add_option("--epochs", t.epochs, "train for N passes over the data (counting resumed steps)")->check(of::cli::at_least(1))->needs(data);
  app.add_option("--steps", t.steps, "train for N optimizer steps in all (counting resumed steps)")->check(of::cli::at_least(1))->needs(data);
  auto* seed_opt = app.add_option("--seed", seed, "shuffling seed (default 0; a resumed run keeps its checkpoint's)")->needs(data);
  app.add_flag("--no-shuffle", no_shuffle, "take samples in file order")->needs(data);
  app.add_option("--last-batch", last_batch, "a last partial batch is dropped or padded (with the epoch's first samples)")
      ->check(CLI::IsMember({"drop", "pad"}))
      ->needs(data);
  auto* checkpoint = app.add_option("--checkpoint", t.checkpoint_dir,
                                    "checkpoint folder (one run writes it at a time): saved at the end, on SIGINT/SIGTERM/SIGHUP and every --checkpoint-every steps")
                         ->needs(data);
  app.add_option("--checkpoint-every", t.checkpoint_every, "also save every N steps")->check(of::cli::at_least(1))->needs(checkpoint);
  app.add_option("--keep-checkpoints", t.keep_checkpoints,
                 "how many of the newest checkpoints stay (default and least 2: a reader of the one before stays safe)")
      ->check(of::cli::at_least(2))
      ->needs(checkpoint);
  auto* resume = app.add_flag("--resume", t.resume, "continue from the latest checkpoint in --checkpoint (if there is one)")->needs(checkpoint);
  app.add_flag("--overwrite", t.overwrite, "start over in a --checkpoint folder that holds checkpoints (replaced at the first save)")
      ->needs(checkpoint)
      ->excludes(resume);
  app.add_option("--init", t.init_path, "start from these weights (safetensors with PyTorch parameter names)")->needs(data);
  app.add_option("--metrics", t.metrics_path, "write one JSON object per logged step (step, epoch, loss, lr, samples_per_s)")->needs(data);
  app.add_option("--log-every", t.log_every, "log every N steps (default: 1 with --metrics, else 100; a terminal shows a live line)")
      ->check(of::cli::at_least(0))
      ->needs(data);
  app.add_flag("--eval", t.eval, "report loss and accuracy on the test split (after training, or of --checkpoint's weights)")->needs(data);
  app.add_option("--eval-data", t.eval_data, "data to evaluate on (default: --data, idx's test split)")->needs(data);
  bool zero_exit_on_signal = false;
  app.add_flag("--zero-exit-on-signal", zero_exit_on_signal,
               "exit 0 after a signal stopped training and its checkpoint was saved (default: 128 + the signal, as shells expect)")
      ->needs(data);
  // Several processes: one per rank of the plan (ofc --devices RxD:cpu).
  int32_t rank = -1, world = 0;
  std::string coordinator;
  double bootstrap_timeout = 60;
  bool launch = false;
  auto* rank_opt = app.add_option("--rank", rank, "this process is rank R of a multi-process run (default: mpirun's, Slurm's, PMI's or torchrun's variables)")
                       ->check(of::cli::at_least(0));
  auto* world_opt = app.add_option("--world", world, "the run's number of ranks (the plan's)")->check(of::cli::at_least(1));
  app.add_option("--coordinator", coordinator, "HOST:PORT where rank 0 listens and the others connect (default: OF_COORDINATOR, MASTER_ADDR:MASTER_PORT, 127.0.0.1:29500)");
  app.add_option("--bootstrap-timeout", bootstrap_timeout, "seconds the ranks wait for each other at the start and the end")->check(of::cli::positive());
  app.add_flag("--launch-local", launch, "run every rank of the plan as a process of this machine, their lines prefixed with the rank")
      ->excludes(rank_opt)
      ->excludes(world_opt);
  of::cli::add_version(app, "ofrun");
  if (auto status = of::cli::parse(app, "ofrun", argc, argv)) return *status;
  return of::cli::guarded_main("ofrun", [&] {
    if (!calibrate_path.empty()) {
      if (data->count() > 0 || !inputs.empty() || !outputs.empty() || launch)
        throw of::cli::UsageError("--calibrate measures and exits: it trains and runs nothing (drop --data, --input, --output, --launch-local)");
      std::vector<of::NamedPath> reads;
      if (!o.plan_path.empty()) reads.push_back({o.plan_path, "the plan"});
      of::refuse_outputs_over_inputs({{calibrate_path, "--calibrate"}}, reads);
      of::check_can_create(calibrate_path, "--calibrate");
      if (merge && o.plan_path.empty()) throw of::cli::UsageError("--merge adds a plan's kernel shapes to the --calibrate file: give the plan");
      const std::optional<of::plan::Plan> plan = o.plan_path.empty() ? std::nullopt : std::optional(of::runtime::load_plan(o.plan_path));
      // Read before measuring: a file that is not a costs file is refused, and left as it was.
      const bool merging = merge && std::filesystem::exists(calibrate_path);
      const std::optional<of::MachineCosts> before = merging ? std::optional(of::read_machine_costs(calibrate_path)) : std::nullopt;
      of::MachineCosts c = of::runtime::calibrate();
      if (before) c.kernels = before->kernels, c.shapes = before->shapes, c.shared_shapes = before->shared_shapes;
      const int64_t tasks = plan ? of::runtime::calibrate_kernels(*plan, c) : 0;
      of::write_machine_costs(c, calibrate_path);
      fmt::print("ofrun: calibrated: matrix {:.2f} GFLOP/s, convolution {:.2f}, recurrent {:.2f}, memory {:.2f} GB/s, copy {:.2f} GB/s, "
                 "act {:.2f} us{}; wrote {}\n", c.rates[0] / 1e9, c.rates[1] / 1e9, c.rates[2] / 1e9, c.rates[3] / 1e9, c.copy_bytes_per_s / 1e9,
                 1e6 * c.task_overhead_s, plan ? fmt::format("; {} kernels of {} on their shapes ({} shapes; {} in the file)", c.kernels.size(), o.plan_path, tasks, c.shapes.size()) : "",
                 calibrate_path);
      return 0;
    }
    if (o.plan_path.empty()) throw of::cli::UsageError("a plan file is required (or --calibrate FILE)");
    if (launch) {
      const int32_t ranks = of::runtime::transport::plan_ranks(of::runtime::load_plan(o.plan_path));
      if (ranks < 2) throw of::cli::UsageError(fmt::format("--launch-local: {} has one rank (compile with ofc --devices RxD:cpu)", o.plan_path));
      std::vector<std::string> args;
      for (int i = 0; i < argc; ++i)
        if (std::string(argv[i]) != "--launch-local") args.emplace_back(argv[i]);
      return of::runtime::launch::launch_local(ranks, args);
    }
    const std::optional<of::runtime::launch::RankEnv> env = of::runtime::launch::rank_env(
        rank_opt->count() ? std::optional<int32_t>(rank) : std::nullopt, world_opt->count() ? std::optional<int32_t>(world) : std::nullopt,
        coordinator, [](const char* name) { return std::getenv(name); });
    of::runtime::transport::BootstrapOptions boot;
    if (env) {
      boot = of::runtime::transport::BootstrapOptions{.rank = env->rank, .world = env->world, .host = env->host, .port = env->port,
                                                      .listen_fd = -1, .token = "", .identity = OF_VERSION_STRING " (" OF_BUILD_STRING ")",
                                                      .timeout_s = bootstrap_timeout};
      if (const char* t = std::getenv("OF_JOB_TOKEN")) boot.token = t;
      if (const char* fd = std::getenv("OF_BOOTSTRAP_FD"); fd && env->rank == 0) boot.listen_fd = std::atoi(fd);  // from --launch-local
      o.rank = t.rank = env->rank;
      o.boot = t.boot = boot;
    }
    try {
    if (data->count() > 0) {
      if (!inputs.empty() || !outputs.empty()) throw of::cli::UsageError("--data trains or evaluates; --input/--output feed inference plans");
      t.plan_path = o.plan_path;
      t.threads = o.threads;
      t.kernel_threads = o.kernel_threads;
      t.policy = o.policy;
      t.gemm = o.gemm;
      t.trace_path = o.trace_path;
      t.memory_report = o.memory_report;
      t.stall_seconds = o.stall_seconds;
      t.late_threads = o.late_threads;
      t.emulate_gpus = o.emulate_gpus;
      if (seed_opt->count() > 0) t.seed = seed;
      t.shuffle = !no_shuffle;
      t.pad_last = last_batch == "pad";
      t.train = t.epochs > 0 || t.steps > 0 || !t.eval;
      t.live = ::isatty(STDERR_FILENO) == 1;
      const of::runtime::train::Report report = of::runtime::train::run_training(t);
      print_report(report);
      // Interrupted (and checkpointed): 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
      if (report.train && report.train->signal != 0 && !zero_exit_on_signal) return 128 + report.train->signal;
      return 0;
    }
    // Each graph input and output is bound once; no output file is an input, the plan or its weights.
    std::set<std::string> bound;
    std::vector<of::NamedPath> reads{{o.plan_path, "the plan"}}, writes;
    for (const std::string& s : inputs) {
      o.inputs.push_back(split_binding(s, "--input"));
      if (!bound.insert("input " + o.inputs.back().first).second) throw of::cli::UsageError(fmt::format("--input '{}' is given twice", o.inputs.back().first));
      reads.push_back({o.inputs.back().second, "--input " + o.inputs.back().first});
    }
    for (const std::string& s : outputs) {
      o.outputs.push_back(split_binding(s, "--output"));
      if (!bound.insert("output " + o.outputs.back().first).second) throw of::cli::UsageError(fmt::format("--output '{}' is given twice", o.outputs.back().first));
      writes.push_back({o.outputs.back().second, "--output " + o.outputs.back().first});
    }
    writes.push_back({o.trace_path, "--trace"});
    of::refuse_outputs_over_inputs(writes, reads);
    for (const auto& [path, what] : writes)
      if (!path.empty()) of::check_can_create(path, what);
    of::runtime::RunResult r = of::runtime::run(o);
    if (!r.reported) return 0;  // another rank runs the sink and reports
    fmt::print("ofrun: {} pieces, {:.3f} s, {:.1f} pieces/s\n", r.pieces, r.seconds, double(r.pieces) / r.seconds);
    return 0;
    } catch (const std::exception& e) {
      // Failed before joining the other ranks (a data file this rank cannot open): rank 0 hears
      // it now rather than at its bootstrap timeout. The job token defaults as the stream's does.
      if (env) {
        if (boot.token.empty()) {
          std::error_code ec;
          if (std::filesystem::is_regular_file(o.plan_path, ec)) {
            const std::vector<uint8_t> bytes = of::read_file(o.plan_path);
            boot.token = fmt::format("plan-{:08x}", of::crc32_of(bytes.data(), bytes.size()));
          }
        }
        of::runtime::transport::report_failure_before_joining(boot, e.what());
      }
      throw;
    }
  });
}
