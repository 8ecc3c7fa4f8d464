// SPDX-License-Identifier: Apache-2.0
// SBP signatures: for one op (after lowering, so by its kernel and attributes), the ways it can
// run on one level of a placement: which SBP each input must have and which each output then
// has. Every kernel can run with all inputs and outputs broadcast (each device computes the
// whole op), so that signature is always last and always valid.
//
// The rules live beside what emits each kernel: an op's OpDef lists the kernels it lowers to and
// its gradient emits (compiler/ops/<op>.cpp), the training passes list theirs (losses and metrics
// in autodiff.cpp, optimizers and accumulation in add_optimizer.cpp). Each kernel of the catalog
// has exactly one entry, a rule or an explicit `broadcast_only` with its reason (tests hold both):
// nothing falls back to all-broadcast silently. The families below are the building blocks.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/parallel/sbp.h"

namespace of::compiler {

struct Signature {
  std::vector<Sbp> in;   // per node input position (absent optional inputs: B)
  std::vector<Sbp> out;  // per output
  // What the kernel on a device must change when this signature splits the work over `parts`:
  // mean_over_parts: a loss over a split batch is a partial sum of local means divided by parts;
  // first_adds_bias: a partial-sum Gemm adds its bias (input 2) on the first summand only.
  enum class Tweak : int8_t { none, mean_over_parts, first_adds_bias } tweak = Tweak::none;
  bool splits_work = false;  // false only for the all-broadcast signature
  // Usable only on a data-parallel level of the mesh (the batch): where splitting anything else
  // would change the numbers, or where the greedy choice would pick it to its cost later.
  bool data_parallel_only = false;
  // Not usable on a data-parallel level of more than one device (see KernelSbp::per_device_batch).
  bool never_data_parallel = false;
};

// Appends the signatures a kernel has beyond all-broadcast (exact for its arithmetic; splits that
// do not divide evenly are dropped later). Inputs after those a rule names (a Reshape's shape,
// small constants) are broadcast.
using SbpRule = void (*)(const Graph& g, const Node& n, std::vector<Signature>& out);

struct KernelSbp {
  std::string_view kernel;
  SbpRule rule = nullptr;            // nullptr: the kernel runs broadcast only
  std::string_view why_broadcast;    // required then: why it cannot be split
  // On a data-parallel level, each device computes on its own part of the batch and nothing else
  // (BatchNorm's batch statistics, as torch's DDP): the rule's batch split is the only signature
  // there. Its other signatures must be marked never_data_parallel; the all-broadcast one is.
  bool per_device_batch = false;
};
inline KernelSbp sbp_rule(std::string_view kernel, SbpRule rule) { return {kernel, rule, {}}; }
inline KernelSbp broadcast_only(std::string_view kernel, std::string_view why) { return {kernel, nullptr, why}; }
inline KernelSbp per_device_batch(std::string_view kernel, SbpRule rule) { return {kernel, rule, {}, true}; }

// Every kernel's entry: the ops' (all_ops()) and the training passes'.
std::vector<KernelSbp> all_kernel_sbp();

// Fails with an internal error for a kernel without an entry (the catalog test prevents it).
std::vector<Signature> signatures_of(const Graph& g, const Node& node);

// The kernel attributes for the device at `coord` of `parts` on a level that uses `s`.
void apply_tweak(const Signature& s, int64_t coord, int64_t parts, Attrs& attrs);

// The rule families (signatures.cpp).
namespace sbp {

const Shape& shape_of(const Graph& g, ValueId v);
// Numpy-broadcasting elementwise: split any output axis; an input broadcast along it is B.
void elementwise(const Graph& g, const Node& n, std::vector<Signature>& out);
// The same, and partial sums pass through (P,...,P -> P): add, sub, neg.
void elementwise_linear(const Graph& g, const Node& n, std::vector<Signature>& out);
// Rows of a batch independent: `batched` inputs (and every output) split along axis 0, the rest
// B; with `out_partial` the outputs are sums over the batch (a weight gradient): P.
void batch_rows(const Node& n, std::vector<bool> batched, bool out_partial, Signature::Tweak tweak, std::vector<Signature>& out);
// Kernels along one axis (attribute `axis`: softmax family, concat, split, slice): every other
// axis may be split, for all inputs and outputs alike.
void other_axes(const Graph& g, const Node& n, std::vector<Signature>& out);
// In-place updates: the first input and every input of its shape split alike, outputs too; the
// step's scalars (learning rate, step) B.
void update(const Graph& g, const Node& n, std::vector<Signature>& out);

}  // namespace sbp
}  // namespace of::compiler
