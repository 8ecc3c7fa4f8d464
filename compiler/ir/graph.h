// SPDX-License-Identifier: Apache-2.0
// The logical graph: values (tensors) and nodes (ops) as the model file states them, with the
// shapes and dtypes that infer-shapes fills in and the kernel choice that each op's lower() makes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/attrs.h"
#include "common/shape.h"

namespace of::compiler {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;
  TensorDesc desc;
  bool known = false;                       // desc filled in (by import or infer-shapes)
  NodeId producer = -1;                     // -1: graph input or constant
  std::vector<NodeId> consumers;
  // Contents known at compile time (an initializer, a Constant node's, optimizer state): present
  // means the value is a constant or a stored tensor. Empty where the bytes are held elsewhere,
  // so that ofc keeps one copy of the model however many devices it plans for: optimizer state
  // (zeros, which the runtime writes) and, in a parallel graph, every box of a logical value (the
  // weights file stores the logical tensor; see `logical`). contents() says which.
  std::optional<std::vector<uint8_t>> data;
  bool graph_input = false;
  bool graph_output = false;
  // A graph input in a parallel graph: the device whose source task reads this box of it.
  int32_t input_device = 0;
  // Read from the model file's initializers (a parameter or buffer, or a tensor the exporter
  // folded), not computed from a Constant node or by the compiler.
  bool initializer = false;
  // Read by a node folded at compile time (const_eval): its contents are baked into the plan.
  bool folded_into_plan = false;
  // A float initializer that reaches the graph's outputs only through comparisons or casts to
  // non-float types (const_eval.h, mark_comparison_only): no gradient reaches it, so it is a
  // constant however the model names it (nanoGPT's float causal mask, compared with 0).
  bool comparison_only = false;
  // Optimizer state (add-optimizer): zeros at the start of every run, so not stored in the
  // weights file (the runtime zeroes it); checkpoints keep it.
  bool optimizer_state = false;
  // In a parallel (physical) graph: the logical tensor this value is a box of, starting at
  // `shard_begin` (an index into Compilation::logical.values), or -1. Weights files and
  // checkpoints hold the logical tensors; each device loads and saves its box.
  ValueId logical = -1;
  std::vector<int64_t> shard_begin;

  // The bytes a constant holds here: its data when that is whole, else null (no contents, or
  // contents held elsewhere). A pass that reads a constant's values must use this.
  const std::vector<uint8_t>* contents() const {
    return data && data->size() == size_t(desc.bytes()) ? &*data : nullptr;
  }
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                       // "" for the default ONNX domain
  std::vector<ValueId> inputs;              // kNoValue for an absent optional input
  std::vector<ValueId> outputs;
  Attrs attrs;                              // as imported
  // Filled by the op's lower(): the kernel to run, its normalized attributes, and which of the
  // inputs the kernel reads at run time (compile-time-only inputs such as Reshape's shape drop out).
  std::string kernel;
  Attrs kernel_attrs;
  std::vector<ValueId> runtime_inputs;
  // Per runtime input: empty, or the shape the kernel reads it as (reshape-views replaced a
  // Reshape's copy by reading its input in place); shorter than runtime_inputs means empty.
  std::vector<Shape> runtime_views;
  // Inputs (indices) that are the op's state rather than parameters, e.g. BatchNorm's running
  // statistics: never trained, whatever their names.
  std::vector<size_t> state_inputs;
  // Per output: the input it overwrites in place (an optimizer update writes the weight and its
  // state back where it read them). Lowering turns such inputs into persistent registers. Outputs
  // beyond these (ZeRO 1/2's copy of an updated shard) are streamed, as any node's.
  std::vector<int32_t> inplace;
  // The in-place state changes every piece (BatchNorm's running statistics), not once per
  // optimizer step: its register's readers read one version per piece.
  bool state_per_piece = false;
  // Reads the weights it takes (persistent registers) once per version, paced by its streamed
  // inputs once per optimizer step (ZeRO 1/2's slice of a replica for its update), not once per
  // micro-batch as the model's readers do.
  bool once_per_version = false;
  // The forward node a backward node was made for (autodiff), or -1.
  NodeId forward = -1;
  // A clone the recompute pass made of forward node `recompute_of` (whose `forward` it also is):
  // it computes that node's outputs again in the backward pass, from the same inputs, so the
  // activations the backward pass reads need not be kept from the forward pass. Parallelize gives
  // it the original's signature, so that it computes the same bits.
  NodeId recompute_of = -1;
  // Values the node waits for without reading them (control edges; lowering makes each a register
  // the task consumes without an input): a recompute clone waits for a gradient its first reader
  // needs, so that it runs when the backward pass gets there, not as soon as its inputs exist.
  std::vector<ValueId> control_inputs;
  // In a parallel graph: the device (index into the plan's device list) the node runs on.
  int32_t device = 0;
  // Slots of the node's output register; 0: CompileOptions::slots. Pipeline stages raise it so
  // that a stage can run ahead by as many micro-batches as the stages after it hold.
  int32_t slots = 0;
};

// A branch of an If node (ONNX then_branch / else_branch), held beside the graph until
// infer-shapes knows the If's condition and puts the taken branch's nodes in the If's place
// (compiler/ops/if_branch.h). What a branch reads from outside it (outer values, its own
// constants) the If node reads too, so that every pass before sees the dependence.
struct BranchRef {
  bool local = false;  // an output of the branch's node `index`; else input `index` of the If node
  int32_t index = 0;   // -1: an absent optional input
};
struct BranchNode {
  std::string name, op_type, domain;
  Attrs attrs;
  std::vector<BranchRef> inputs;
  std::string output;  // its one output's name in the model
};
struct Branch {
  std::vector<BranchNode> nodes;  // in order
  std::vector<BranchRef> outputs;
};

struct Graph {
  std::string name;
  std::string source_file;                  // names the model in errors
  std::vector<Value> values;
  std::vector<Node> nodes;                  // in topological order (import checks this)
  std::vector<ValueId> inputs;              // graph inputs fed at run time
  std::vector<ValueId> outputs;
  // Compiling a training (or gradient) plan: BatchNorm normalises with batch statistics and
  // updates its running ones; otherwise (inference, evaluation) it uses the running ones.
  bool training = false;
  // The exporter's folded float initializers train too (CompileOptions::folded == "train").
  bool train_folded = false;
  // The names of the model's parameters that torch trains (requires_grad), sorted, when the model
  // file lists them (metadata `of.requires_grad`, which scripts/of_export.py writes): an ONNX
  // initializer may as well be a buffer (a positional encoding) or a frozen parameter, which
  // PyTorch never updates. Absent: every float initializer the model names trains.
  std::optional<std::vector<std::string>> requires_grad;
  // (embedding weight, padding_idx) of each nn.Embedding with a padding row, as the model file
  // lists them (metadata `of.padding_idx`): torch's gradient never touches that row, which the
  // exporter's Gather cannot say.
  std::vector<std::pair<std::string, int64_t>> padding_rows;
  // The running means (state_dict names, sorted) of the BatchNorms made with momentum=None, as
  // the model file lists them (metadata `of.batch_norm_cumulative`): their running statistics are
  // the cumulative average of every batch's, which the export cannot say (it writes the first
  // batch's factor, 1, as momentum 0: torch's momentum 1.0).
  std::vector<std::string> cumulative_batch_norms;
  // The branches of the model's If nodes (their attributes then_branch and else_branch index it).
  std::vector<Branch> branches;

  ValueId add_value(std::string name);
};

// Appends a node running `kernel` (its attributes given, every input read at run time) with one
// output, a new value NAME of `desc`; returns that output. The caller keeps the topological order.
ValueId append_node(Graph& g, std::string name, std::string op, std::string kernel, Attrs attrs, std::vector<ValueId> inputs,
                    TensorDesc desc);

// Makes `v` a known constant f32 scalar holding x (a loss's seed 1, a clipping bound).
void set_scalar(Value& v, float x);

// Drops the nodes marked dead (folded to constants), renumbering the rest and every link to them.
void remove_nodes(Graph& g, const std::vector<bool>& dead);

// Recomputes every value's producer and consumers from the nodes' inputs and outputs (after a
// pass rewrote the node list).
void relink(Graph& g);

// Puts the nodes in `order` (a permutation of their ids that keeps every producer before its
// readers), renumbering every link to them.
void reorder_nodes(Graph& g, const std::vector<NodeId>& order);

// Structural invariants (ids in range, producer/consumer links agree, topological order,
// every value produced at most once). Throws an internal error naming `after` (a pass name).
void verify(const Graph& g, const std::string& after);

}  // namespace of::compiler
