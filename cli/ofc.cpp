// SPDX-License-Identifier: Apache-2.0
// ofc: compile an ONNX model into a plan (and its weights file beside it).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include "cli/cli_args.h"
#include "cli/cli_main.h"
#include "cli/huge_pages.h"
#include "common/output_paths.h"
#include "compiler/auto_parallel.h"
#include "compiler/compile.h"
#include "compiler/memory_options.h"
#include "compiler/plan/plan_writer.h"

int main(int argc, char** argv) {
  of::cli::restart_with_huge_pages(argv);
  CLI::App app{"ofc: compile an ONNX model into an of plan"};
  std::string model, output;
  of::compiler::CompileOptions options;
  app.add_option("model", model, "ONNX model file (as torch.onnx.export writes it)")->required();
  app.add_option("-o,--output", output, "plan file to write (weights go beside it as <stem>.safetensors)")->required();
  app.add_option("--slots", options.slots, "slots per streamed register (>= 2 pipelines)")->check(of::cli::between(1, 64));
  app.add_option("--pieces", options.pieces, "default number of pieces ofrun streams (0: as many as fed)")->check(of::cli::at_least(0));
  auto* loss = app.add_option("--loss", options.loss,
                              "append a loss to the model's output: cross_entropy[:label_smoothing=E,ignore_index=K] (integer labels, "
                              "mean) or mse; or output: the model's one output is its own loss")
                   ->check([](const std::string& spec) {
                     const std::string kind = spec.substr(0, spec.find(':'));
                     return kind == "cross_entropy" || kind == "mse" || kind == "output"
                                ? std::string()
                                : "'" + spec + "' is not cross_entropy[:...], mse or output";
                   });
  app.add_option("--label", options.label,
                 "name of the new graph input the loss compares against (--loss output: the model's input holding the labels)")
      ->needs(loss);
  app.add_flag("--gradients", options.gradients, "also output every weight's gradient as '<weight>.grad' (needs --loss)")->needs(loss);
  auto* train = app.add_flag("--train", options.train, "compile a training plan (needs --loss); also writes <stem>.eval.ofp for --eval")->needs(loss);
  app.add_option("--optimizer", options.optimizer,
                 "sgd[:lr=,momentum=,dampening=,nesterov=0|1,weight_decay=] | adam|adamw[:lr=,beta1=,beta2=,eps=,weight_decay=,amsgrad=0|1] | "
                 "rmsprop[:lr=,alpha=,eps=,weight_decay=,momentum=,centered=0|1] | adagrad[:lr=,lr_decay=,weight_decay=,eps=] (torch.optim's defaults)")
      ->capture_default_str()
      ->needs(train);
  app.add_option("--schedule", options.schedule, "learning-rate schedule, as the PyTorch recipe's: constant | warmup:steps=N | cosine[:min_lr=X] | linear | step:size=N[,gamma=G] | "
                 "multistep:milestones=A/B/..[,gamma=G] | exponential:gamma=G | polynomial[:power=P,min_lr=X] | cosine_restarts:t0=N[,t_mult=K,min_lr=X]; "
                 "all but constant take warmup=N,start=S (linear warm-up from S x lr) "
                 "and per=step|epoch (README: Training)")
      ->capture_default_str()
      ->needs(train);
  app.add_option("--micro-batches", options.micro_batches, "pieces (micro-batches) whose gradients one optimizer step sums")
      ->check(of::cli::between(1, 1 << 20))
      ->needs(train);
  app.add_flag("--recompute", options.recompute,
               "recompute in the backward pass the activations cheap ops (element-wise, normalisation) make from kept tensors, instead of keeping them")
      ->needs(loss);
  std::string devices = "1:cpu";
  app.add_option("--folded", options.folded,
                 "train | freeze: what --train does with parameters the exporter folded into new names (default: refuse)")
      ->check(CLI::IsMember({"train", "freeze"}))
      ->needs(train);
  app.add_option("--freeze", options.freeze, "initializers (names or globs) not to train; repeatable")->needs(train);
  app.add_option("--no-weight-decay", options.no_weight_decay,
                 "trained tensors (names or globs, e.g. '*.bias') the optimizer's weight_decay leaves out, as a torch param "
                 "group with weight_decay=0; repeatable")
      ->needs(train);
  app.add_option("--param-lr", options.param_lr,
                 "GLOB=LR: trained tensors matching GLOB (e.g. 'backbone.*') train at LR, as a torch param group with its own lr; "
                 "the schedule scales it alike; the first matching pattern wins; repeatable")
      ->needs(train);
  app.add_option("--clip-grad-norm", options.clip_grad_norm,
                 "clip each step's gradients to this global 2-norm, as torch.nn.utils.clip_grad_norm_(params, MAX) before "
                 "optimizer.step()")
      ->check(CLI::Range(1e-30, 1e30))
      ->needs(train);
  app.add_option("--clip-grad-value", options.clip_grad_value,
                 "clamp each step's gradient elements to [-V, V], as torch.nn.utils.clip_grad_value_(params, V) before optimizer.step()")
      ->check(CLI::Range(1e-30, 1e30))
      ->needs(train);
  app.add_flag("--no-weight-decay-1d", options.no_weight_decay_1d,
               "leave every trained tensor of fewer than 2 dimensions (biases, norm weights) out of weight_decay, as nanoGPT "
               "and timm group them")
      ->needs(train);
  app.add_option("--devices", devices, "devices to place the plan on: N:cpu (N CPU devices), RxD:cpu (R ranks of D CPU devices), N:cuda or RxD:cuda (GPUs)")->capture_default_str();
  auto* dp_opt = app.add_option("--dp", options.dp, "data-parallel degree (batch split, weights replicated)")->check(of::cli::between(1, 4096));
  auto* tp_opt = app.add_option("--tp", options.tp, "tensor-parallel degree (weights split; SBP inference picks how)")->check(of::cli::between(1, 4096));
  auto* pp_opt = app.add_option("--pp", options.pp, "pipeline stages (micro-batches stream through them)")->check(of::cli::between(1, 4096));
  app.add_option("--parallel-config", options.parallel_config, "JSON: pipeline stage boundaries and SBP hints per tensor (they win)");
  bool no_collectives = false;
  app.add_flag("--no-collectives", no_collectives,
               "lower layout conversions (gradient all-reduce, all-gather, ...) point to point: slices, copies, concatenations and additions "
               "(default: between devices of one rank, one collective task per device)");
  double bucket_mb = 25;
  app.add_option("--bucket-mb", bucket_mb,
                 "all-reduce data-parallel gradients together, this many MiB a bucket, as PyTorch's DDP does (bucket_cap_mb): one "
                 "reduction's tasks and messages per bucket, not per weight, the same sums; 0 reduces each weight's alone")
      ->check(CLI::Range(0.0, 1048576.0))
      ->capture_default_str();
  app.add_option("--zero", options.zero,
                 "ZeRO stage over the data-parallel devices: 1 shards every trained weight's optimizer state and update (the "
                 "gradient reduce-scattered to it, the weight gathered into each device's copy once per step); 2 also sums "
                 "micro-batches' gradients on the shard; 3 also keeps the weight only as shards (gathered before each use); "
                 "0 replicates them")
      ->check(of::cli::between(0, 3))
      ->needs(train);
  bool no_sharing = false;
  auto* no_sharing_opt = app.add_flag("--no-memory-sharing", no_sharing,
                                      "every register slot gets bytes of its own (default: registers whose uses one device orders share bytes)");
  std::string share_order;
  app.add_option("--share-order", share_order,
                 "how soon the tasks off the backward pass's chain (a weight's gradient, its reduction over the dp devices, its "
                 "update) must have run for bytes to be reused: tight (a few tasks on: least memory; the default with --zero), overlap (the "
                 "default otherwise: as tight, but reductions over devices and their updates 16 tasks on, so communication "
                 "overlaps the backward pass), "
                 "loose (all of them 16 on: more memory, no waits where a device runs several tasks at once, as ofrun "
                 "--threads above the device count does on CPU)")
      ->check(CLI::IsMember({"tight", "overlap", "loose"}))
      ->excludes(no_sharing_opt);
  std::string device_memory;
  app.add_option("--device-memory", device_memory,
                 "memory each device may use, e.g. 512MiB or 16GB (default: unlimited); a plan that does not fit is refused, "
                 "naming what --recompute, --zero 3 and --share-order tight would need");
  bool auto_parallel = false;
  app.add_flag("--auto", auto_parallel,
               "choose --dp/--tp/--pp for --devices by predicted step time (degrees given are kept; --share-order tight, "
               "--recompute and --zero 3 are weighed only when nothing fits --device-memory); ofdump shows what was weighed");
  int32_t auto_compile = 3;
  app.add_option("--auto-compile", auto_compile,
                 "with --auto: compile and play at most this many splits, those a closed-form estimate ranks best (those refused "
                 "before compiling do not count; those refused for their size, most of a compile, do); more weighs more in full")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  std::string costs_file;
  app.add_option("--costs", costs_file, "machine costs for the predicted step time, as ofrun --calibrate FILE writes them (default: built-in)");
  bool record_options = false;
  app.add_flag("--memory-options", record_options,
               "compile again with --recompute, --zero 3, --share-order tight and their combinations, and --zero 1, and record each device's peak "
               "under each in the plan (ofdump --memory)")
      ->needs(train);
  app.add_flag("--time-passes", options.time_passes, "print each compiler pass's wall time and the graph's size after it (stderr)");
  of::cli::add_version(app, "ofc");
  if (auto status = of::cli::parse(app, "ofc", argc, argv)) return *status;
  return of::cli::guarded_main("ofc", [&] {
    // Nothing ofc writes may be what it reads (checked by inode: links and "./m.onnx" alike).
    const of::compiler::PlanOutputs out = of::compiler::plan_outputs(output, options.train);
    std::vector<of::NamedPath> writes{{out.plan, "the plan"}, {out.weights, "the weights file"}};
    if (options.train) writes.push_back({out.eval_plan, "the evaluation plan"});
    of::refuse_outputs_over_inputs(writes, {{model, "the model"}, {options.parallel_config, "--parallel-config"}, {costs_file, "--costs"}});
    of::check_can_create(out.plan, "the plan");
    const of::compiler::DeviceSpec spec = of::compiler::parse_devices(devices);
    options.devices = spec.devices;
    options.ranks = spec.ranks;
    options.device_kind = spec.kind;
    options.share_memory = !no_sharing;
    if (!share_order.empty())
      options.share_order = share_order == "tight"   ? of::compiler::ShareOrder::tight
                            : share_order == "loose" ? of::compiler::ShareOrder::loose
                                                     : of::compiler::ShareOrder::overlap;
    options.collectives = !no_collectives;
    options.bucket_bytes = uint64_t(bucket_mb * double(uint64_t(1) << 20));
    if (!costs_file.empty()) options.costs = of::read_machine_costs(costs_file);
    else if (spec.kind == 1) options.costs = of::builtin_cuda_costs();
    if (!device_memory.empty()) options.device_memory = of::compiler::parse_bytes(device_memory, "--device-memory");
    // Left unsaid, the parallel degrees fill the devices with data parallelism.
    if (!auto_parallel && options.devices > 1 && options.dp * options.tp * options.pp == 1) options.dp = options.devices;
    of::compiler::Compilation c = [&] {
      if (auto_parallel) {
        of::compiler::AutoConstraints fixed;
        if (dp_opt->count()) fixed.dp = options.dp;
        if (tp_opt->count()) fixed.tp = options.tp;
        if (pp_opt->count()) fixed.pp = options.pp;
        fixed.compiled = auto_compile;
        of::compiler::AutoChoice choice = of::compiler::choose_parallel(model, options, fixed);
        options = choice.best.options;
        const auto& k = choice.candidates;
        std::string others;
        for (size_t i = 1; i < k.size() && i < 4 && k[i].refused.empty(); ++i)
          others += fmt::format("{}{} {:.3f} ms", others.empty() ? "; next: " : ", ", k[i].flags, 1e3 * k[i].step_seconds);
        const std::string ranked = choice.ranked > int32_t(k.size()) ? fmt::format(" (the best of {} by estimate)", choice.ranked) : "";
        fmt::print("ofc: --auto weighed {} strategies{} and chose {} ({:.3f} ms predicted{})\n", k.size(), ranked, k[0].flags,
                   1e3 * k[0].step_seconds, others);
        return std::move(choice.best);
      }
      try {
        return of::compiler::compile_model(model, options);
      } catch (const of::Error& e) {
        // A training plan beyond --device-memory: say what each option would need, compiled.
        if (e.where().field != "--device-memory" || !options.train) throw;
        const auto alternatives = of::compiler::memory_options(model, options);
        if (alternatives.empty()) throw;
        throw of::Error(fmt::format("{}; compiled with them, the largest device needs {}", e.what(),
                                    of::compiler::describe_largest(alternatives, options.device_memory)));
      }
    }();
    if (record_options) c.tasks.memory_options = of::compiler::memory_options(model, options);
    std::string weights;
    const auto write_start = std::chrono::steady_clock::now();
    if (options.train) {
      of::compiler::CompileOptions eval_options = options;
      eval_options.train = false;
      eval_options.gradients = false;
      eval_options.recompute = false;
      eval_options.zero = 0;
      eval_options.micro_batches = 1;
      eval_options.eval_metrics = true;
      eval_options.time_passes = false;  // its time is the "eval plan and writing" line
      eval_options.devices = 1;  // evaluation runs on one device, from the same weights file
      eval_options.ranks = 1;
      eval_options.dp = eval_options.tp = eval_options.pp = 1;
      of::compiler::Compilation eval = of::compiler::compile_model(model, eval_options);
      weights = of::compiler::write_training_plans(c, eval, output);
    } else {
      weights = of::compiler::write_plan(c, output);
    }
    if (options.time_passes)
      fmt::print(stderr, "ofc: {:<24} {:8.1f} ms\n", options.train ? "eval plan and writing" : "writing",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - write_start).count());
    uint64_t arena = 0;
    for (const auto& a : c.tasks.arenas) arena += a.bytes;
    fmt::print("ofc: wrote {} ({} tasks, {} registers, {:.1f} MiB arena) and {}\n", output, c.tasks.tasks.size(),
               c.tasks.regsts.size(), double(arena) / (1 << 20), weights);
    fmt::print("ofc: predicted step time {:.3f} ms (costs: {})\n", 1e3 * c.tasks.prediction.step_seconds, c.tasks.prediction.costs);
    if (options.train)
      fmt::print("ofc: {} tensors train, {} frozen, {} state\n", c.training.weights.size(), c.training.frozen, c.training.state);
    if (options.train && !c.training.unsure.empty()) {
      const auto& unsure = c.training.unsure;
      const size_t shown = std::min<size_t>(unsure.size(), 3);
      fmt::print("ofc: {} train{}: the model file does not say whether {} buffer{}, which torch would never update "
                 "(scripts/of_export.py lists the parameters; or --freeze NAME)\n",
                 fmt::format("{}", fmt::join(unsure.begin(), unsure.begin() + ptrdiff_t(shown), ", ")) +
                     (unsure.size() > shown ? fmt::format(" and {} more", unsure.size() - shown) : ""),
                 unsure.size() == 1 ? "s" : "", unsure.size() == 1 ? "it is a" : "they are", unsure.size() == 1 ? "" : "s");
    }
    if (options.train && !c.training.momentum_one.empty()) {
      const auto& bns = c.training.momentum_one;
      fmt::print("ofc: {}: each batch's statistics replace {} (torch momentum 1.0, as the model file says); "
                 "a BatchNorm made with momentum=None (a cumulative average) exports the same: scripts/of_export.py tells them apart\n",
                 fmt::format("{}", fmt::join(bns.begin(), bns.begin() + ptrdiff_t(std::min<size_t>(bns.size(), 3)), ", ")) +
                     (bns.size() > 3 ? fmt::format(" and {} more", bns.size() - 3) : ""),
                 bns.size() == 1 ? "it" : "them");
    }
    if (record_options)
      fmt::print("ofc: memory options: the largest device needs {}{}\n", of::compiler::human(std::max_element(
                     c.tasks.arenas.begin(), c.tasks.arenas.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; })->bytes),
                 c.tasks.memory_options.empty() ? " (every option is in use)"
                                                : " as compiled, " + of::compiler::describe_largest(c.tasks.memory_options, options.device_memory));
    if (options.zero > 0)
      fmt::print("ofc: --zero {}: {} weights sharded over {} data-parallel devices, {} left whole (no axis divides by {}{})\n", options.zero,
                 c.parallel.zero_sharded, options.dp, c.parallel.zero_replicated, options.dp,
                 options.zero == 3 ? "" : " outside the axes other levels split");
    return 0;
  });
}
