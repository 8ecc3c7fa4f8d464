// SPDX-License-Identifier: Apache-2.0
// A compiler pass: a small step over the compilation state that reports whether it changed it.
// build_pipeline() orders them; the graph verifier runs after every pass that changed something.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/machine_costs.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/task_graph.h"

namespace of::compiler {

inline constexpr int32_t kMaxMicroBatches = 65536;
// The most an arena may hold: x86-64 and AArch64 give a process 2^47 bytes of address space.
inline constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 47;

// Where registers share bytes, how soon the tasks off the backward pass's chain (a weight's
// gradient, its reduction over the dp devices, its update) must have run for the chain to go on.
enum class ShareOrder : int8_t {
  tight,    // all of them a few tasks on: their bytes are reused soonest (least memory)
  overlap,  // reductions over devices and what follows them 16 tasks on, the rest a few
  loose,    // all of them 16 tasks on: more memory, no wait on a device's own branches
};

struct CompileOptions {
  int32_t slots = 2;       // slots per streamed register
  // Registers of one device whose uses can be ordered share bytes (plan-memory, share_memory.h);
  // false: every slot has bytes of its own (ofc --no-memory-sharing).
  bool share_memory = true;
  // How tightly sharing orders the tasks off a group's chain into it (share_memory.cpp; ofc
  // --share-order). Unset: share_order_of's default.
  std::optional<ShareOrder> share_order;
  int64_t pieces = 0;      // default pieces to stream (0: as many as the input holds)
  std::string loss;        // "", "cross_entropy" or "mse": appended to the model's one output
  std::string label = "label";  // the graph input the loss compares against
  bool gradients = false;  // also output every weight's gradient, named "<weight>.grad"
  // Training (needs loss): update every weight in place after each step (add-optimizer).
  bool train = false;
  std::string optimizer = "sgd:lr=0.01";  // sgd|adam|adamw[:key=value,...]
  // Trained tensors the optimizer's weight_decay leaves out, as a PyTorch param group with
  // weight_decay 0 would: names or globs (`*.bias`), and with no_weight_decay_1d every tensor of
  // fewer than two dimensions (nanoGPT's and timm's rule: biases, normalization weights).
  std::vector<std::string> no_weight_decay;
  bool no_weight_decay_1d = false;
  // "GLOB=LR": trained tensors whose name matches train at LR instead of the optimizer's lr, as a
  // PyTorch param group with its own lr (a fine-tuned backbone's smaller one); the schedule scales
  // it as torch's schedulers scale each group's. The first pattern a tensor matches wins.
  std::vector<std::string> param_lr;
  // > 0: every step's gradients are clipped to this global 2-norm first, as
  // torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) between backward() and step().
  double clip_grad_norm = 0;
  // > 0: every gradient element clamped to [-v, v] there instead, torch.nn.utils.clip_grad_value_.
  double clip_grad_value = 0;
  std::string schedule = "constant";       // common/lr_schedule.h
  int32_t micro_batches = 1;               // pieces per optimizer step (at most kMaxMicroBatches)
  // Evaluation plan: with a cross_entropy loss, output per-sample "eval/nll" and "eval/correct"
  // instead of the mean loss.
  bool eval_metrics = false;
  // Parallel plans (compiler/passes/parallelize.cpp): `devices` devices of `device_kind`, split as
  // data x tensor x pipeline parallel (their product must be `devices`).
  int32_t devices = 1;
  // plan::DeviceRef's kind: 0 cpu, 1 cuda. A cuda plan's ranks each get a host device too, which
  // holds what the host does (sources, the sink, checkpoints; lower_to_tasks.cpp).
  int8_t device_kind = 0;
  int32_t ranks = 1;  // the devices are split evenly over ranks, rank-major: device d is on rank d / (devices / ranks)
  int32_t dp = 1, tp = 1, pp = 1;
  uint64_t device_memory = 0;  // bytes each device may hold (check-plan); 0: unlimited
  std::string parallel_config;  // JSON file of stage boundaries and SBP hints (parallel_config.h)
  // Float initializers the exporter named itself ("onnx::MatMul_12": parameters it transposed or
  // folded BatchNorm into): "" refuses to train such a model, "train" trains them, "freeze"
  // keeps them fixed.
  std::string folded;
  // Float initializers never trained (names or globs, e.g. "encoder.*"), like ONNX Runtime
  // training's frozen_params; they stay in the weights file and checkpoints.
  std::vector<std::string> freeze;
  // Activations the backward pass reads that cheap ops make again from kept tensors are recomputed
  // there instead of kept (compiler/passes/recompute.cpp; ofc --recompute).
  bool recompute = false;
  // Layout conversions between devices of one rank run as collective tasks, one per device, each
  // reading the others' registers directly (compiler/parallel/boxing.h); false: point to point
  // only (ofc --no-collectives), the same numbers with more tasks.
  bool collectives = true;
  // Gradient buckets (ofc --bucket-mb; compiler/parallel/gradient_bucket.h): data-parallel
  // gradients all-reduced together, up to this many bytes a bucket (the last one past it), as
  // PyTorch's DDP (bucket_cap_mb, 25 by default); 0: one reduction per weight.
  uint64_t bucket_bytes = uint64_t(25) << 20;
  // ZeRO stage over the data-parallel devices (ofc --zero): 0 replicates every weight; 3 shards
  // each trained weight, its gradient and its optimizer state by rows (or the first axis that
  // divides), gathering the weight before its readers. Stages 1 and 2 are not built.
  int32_t zero = 0;
  // Parallelize stops with an error once the physical graph passes this many nodes (0: never):
  // ofc --auto's bound on a candidate far larger than the first it weighed (auto_parallel.cpp).
  uint64_t max_parallel_nodes = 0;
  // The rates the plan's predicted step time uses (ofc --costs FILE, which ofrun --calibrate
  // writes; compiler/parallel/step_time.h).
  MachineCosts costs = builtin_costs();
  // Print each pass's wall time and the graph's size after it on stderr (ofc --time-passes).
  bool time_passes = false;
};

// The order sharing uses: as given, else tight under --zero (the user asked for memory first; with
// micro-batches, zero 2's reductions beside the backward pass leave its groups too little to
// gain under overlap), else overlap.
inline ShareOrder share_order_of(const CompileOptions& o) {
  if (o.share_order) return *o.share_order;
  return o.zero > 0 ? ShareOrder::tight : ShareOrder::overlap;
}

// What autodiff and add-optimizer leave for the plan writer's job section.
struct Training {
  std::vector<std::pair<ValueId, ValueId>> weights;  // (weight, its gradient), in first-use order
  int64_t frozen = 0;  // float initializers read at run time but not trained
  int64_t state = 0;   // buffers an op updates (BatchNorm's running statistics) or reads as data (a loss's class weights)
  // Trained tensors that could as well be buffers torch never updates, for a model that does not
  // list its parameters (compiler/passes/requires_grad.h); ofc names them in a note.
  std::vector<std::string> unsure;
  // The running means of the BatchNorms whose file says torch momentum 1.0, for a model that does
  // not list its cumulative ones: momentum=None exports the same, and ofc says so in a note.
  std::vector<std::string> momentum_one;
  float lr = 0;
  std::string label;
};

// What parallelize leaves for the plan (ofdump --sbp shows it).
struct ParallelInfo {
  int32_t devices = 1;
  std::vector<int32_t> stage_of_device = {0};
  std::vector<plan::TensorLayout> tensors;
  std::vector<plan::Boxing> boxings;
  int64_t zero_sharded = 0, zero_replicated = 0;  // with --zero 3: weights sharded, and those left whole (no axis divides)
};

// Bytes for people in ofc's messages: "4.0 MiB", "512 bytes" (check_plan.cpp).
std::string human(uint64_t bytes);

// The rank of each of `devices` devices: --devices RxD:cpu puts device d on rank d / D; a plan
// whose device count the ranks do not divide (or no ranks given) is one rank.
inline std::vector<int32_t> rank_of_devices(const CompileOptions& o, int32_t devices) {
  const int32_t per_rank = o.ranks > 0 && devices % o.ranks == 0 ? devices / o.ranks : devices;
  std::vector<int32_t> rank(static_cast<size_t>(devices), 0);
  for (int32_t d = 0; d < devices; ++d) rank[size_t(d)] = d / per_rank;
  return rank;
}

struct Compilation {
  Graph graph;
  Graph logical;  // a parallel plan's logical graph (graph is then per device); else empty
  ParallelInfo parallel;
  TaskGraph tasks;
  CompileOptions options;
  Training training;
  // Plan-memory played `tasks` as they are to the end (the deadlock check, with its share
  // groups' order): check-plan need not play the same graph again (a million-task plan's play
  // takes seconds). Any later change to `tasks` must clear it.
  bool played_to_end = false;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual bool run(Compilation& c) = 0;
};

class Pipeline {
 public:
  template <typename P>
  void add() { passes_.push_back(std::make_unique<P>()); }
  // Runs every pass, or those before the pass named `stop_before` (the graph a strategy
  // estimate costs: before "parallelize").
  void run(Compilation& c, const std::string& stop_before = {}) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

Pipeline build_pipeline(const CompileOptions& options);

// Declared here because build_pipeline is their only user besides the tests.
class InferShapes final : public Pass {
 public:
  std::string name() const override { return "infer-shapes"; }
  bool run(Compilation& c) override;
};

class Autodiff final : public Pass {
 public:
  std::string name() const override { return "autodiff"; }
  bool run(Compilation& c) override;
};

class AddOptimizer final : public Pass {
 public:
  std::string name() const override { return "add-optimizer"; }
  bool run(Compilation& c) override;
};

class Recompute final : public Pass {
 public:
  std::string name() const override { return "recompute"; }
  bool run(Compilation& c) override;
};

class Parallelize final : public Pass {
 public:
  std::string name() const override { return "parallelize"; }
  bool run(Compilation& c) override;
};

class SplitBatchNorm final : public Pass {
 public:
  std::string name() const override { return "split-batch-norm"; }
  bool run(Compilation& c) override;
};

class FuseGelu final : public Pass {
 public:
  std::string name() const override { return "fuse-gelu"; }
  bool run(Compilation& c) override;
};

class FuseLayerNorm final : public Pass {
 public:
  std::string name() const override { return "fuse-layer-norm"; }
  bool run(Compilation& c) override;
};

class FuseMaskedSoftmax final : public Pass {
 public:
  std::string name() const override { return "fuse-masked-softmax"; }
  bool run(Compilation& c) override;
};

class FuseTransposedWeights final : public Pass {
 public:
  std::string name() const override { return "fuse-transposed-weights"; }
  bool run(Compilation& c) override;
};

class ReshapeViews final : public Pass {
 public:
  std::string name() const override { return "reshape-views"; }
  bool run(Compilation& c) override;
};

class FuseActivations final : public Pass {
 public:
  std::string name() const override { return "fuse-activations"; }
  bool run(Compilation& c) override;
};

class LowerToTasks final : public Pass {
 public:
  std::string name() const override { return "lower-to-tasks"; }
  bool run(Compilation& c) override;
};

class InsertTransfers final : public Pass {
 public:
  std::string name() const override { return "insert-transfers"; }
  bool run(Compilation& c) override;
};

class PlanMemory final : public Pass {
 public:
  std::string name() const override { return "plan-memory"; }
  bool run(Compilation& c) override;
};

class CheckPlan final : public Pass {
 public:
  std::string name() const override { return "check-plan"; }
  bool run(Compilation& c) override;
};

// Records the plan's predicted step time (compiler/parallel/step_time.h) under options.costs.
class PredictStepTime final : public Pass {
 public:
  std::string name() const override { return "predict-step-time"; }
  bool run(Compilation& c) override;
};

// The float initializers training updates, in first-use order: named by the model, not state,
// not frozen (autodiff.cpp). Refuses a model whose parameters the exporter folded (see
// CompileOptions::folded) and --freeze patterns that match nothing; counts the frozen ones.
std::vector<ValueId> trainable_weights(Compilation& c);

// Plays the actor protocol on `tg` for `pieces` source pieces; fails naming the cycle of waits
// when the actors would stall (check_plan.cpp).
void check_no_deadlock(const TaskGraph& tg, int64_t pieces);
// Enough pieces that every slot is reused and every weight version replaced (check_plan.cpp).
int64_t deadlock_check_pieces(const TaskGraph& tg, const CompileOptions& options);

}  // namespace of::compiler
