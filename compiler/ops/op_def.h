// SPDX-License-Identifier: Apache-2.0
// OpDef: everything the compiler knows about one operator, defined once in compiler/ops/<op>.cpp
// and listed in compiler/ops/registry.cpp. infer() computes output shapes and dtypes and rejects
// what does not fit (naming the node); lower() picks the kernel, writes its normalized attributes
// and says which inputs the kernel reads at run time.
#pragma once

#include <fmt/core.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "compiler/ir/graph.h"
#include "compiler/parallel/signatures.h"

namespace of::compiler {

class OpCtx {
 public:
  OpCtx(Graph& g, Node& node) : g_(g), node_(node) {}

  Node& node() { return node_; }
  const Node& node() const { return node_; }
  bool training() const { return g_.training; }  // see Graph::training
  const Attrs& attrs() const { return node_.attrs; }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  bool has_in(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] != kNoValue; }
  const TensorDesc& in(size_t i) const;            // fails (naming the node) when absent
  // Constant contents of input i, or nullptr when it is not known at compile time.
  const std::vector<uint8_t>* const_data(size_t i) const;
  // Input i is a parameter (const_eval.h's is_parameter: a float initializer under the model's
  // own name), which may train: an op that could take it as a compile-time constant (Pow's
  // exponent, Clip's bounds) reads it at run time instead, so that its gradient flows.
  bool parameter(size_t i) const;
  // Integer contents of a constant int64/int32 input (e.g. Reshape's shape); fails if not constant.
  std::vector<int64_t> const_ints(size_t i) const;
  TensorDesc& out(size_t i);                        // marks output i known
  // Optional outputs nothing reads (Dropout's mask) are dropped; false when output i is read.
  bool drop_output_if_unused(size_t i);
  // Appends an output the model file does not have (what a kernel saves for the backward pass).
  ValueId add_output(const std::string& suffix, TensorDesc desc);

  // Checks the input count is within [lo, hi] and the output count within [1, max_out].
  void expect_arity(size_t lo, size_t hi, size_t max_out = 1) const;
  void expect_float(size_t i) const;                // input i must be f32
  // Normalizes an axis attribute against a rank (negative counts from the end).
  int64_t axis(int64_t axis, int64_t rank, std::string_view what = "axis") const;

  // lower(): the kernel and its attributes; by default every present input is read at run time.
  void set_kernel(std::string name, Attrs attrs = {});
  void set_runtime_inputs(std::vector<size_t> input_indices);

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw Error(where(), fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  Where where() const {
    return Where{.file = g_.source_file, .node = node_.name, .op = node_.op_type, .rank = -1, .field = {}};
  }
  Graph& g_;
  Node& node_;
};

// What an op's gradient rule sees (compiler/passes/autodiff.cpp builds it): the forward node
// after lowering, the gradients of its outputs, and a way to emit backward kernel nodes.
class GradCtx {
 public:
  GradCtx(Graph& g, NodeId node, std::vector<ValueId>& grads, std::vector<bool>& wants)
      : g_(g), node_(node), grads_(grads), wants_(wants) {}

  const Node& node() const { return g_.nodes[size_t(node_)]; }
  const Attrs& attrs() const { return node().kernel_attrs; }  // the lowered kernel's attributes
  ValueId in(size_t i) const { return node().inputs[i]; }
  ValueId out(size_t i) const { return node().outputs[i]; }
  const TensorDesc& desc(ValueId v) const { return g_.values[size_t(v)].desc; }
  // kNoValue when nothing downstream of output i needs a gradient.
  ValueId out_grad(size_t i) const { return grads_[size_t(out(i))]; }
  // Whether input i needs a gradient (a weight, or computed from one).
  bool wants(size_t i) const;

  // Emits a node running `kernel` on `inputs`, with one output of `desc`; returns that output.
  ValueId emit(const std::string& op, const std::string& kernel, std::vector<ValueId> inputs, Attrs attrs,
               TensorDesc desc);
  // The same with one output per desc.
  std::vector<ValueId> emit_n(const std::string& op, const std::string& kernel, std::vector<ValueId> inputs, Attrs attrs,
                              std::vector<TensorDesc> descs);
  // A constant f32 scalar (e.g. -1 for Sub's second input).
  ValueId scalar(float x);
  // A constant f32 tensor of `shape` holding `values`.
  ValueId constant(Shape shape, const std::vector<float>& values);
  // The contents of a compile-time constant as floats, or nullopt when v is computed at run time.
  std::optional<std::vector<float>> const_floats(ValueId v) const;
  // A copy of v with another shape of the same element count (a Reshape node).
  ValueId reshape(ValueId v, Shape shape);
  // Sums `dx` of `shape` back to `target` (undoing numpy broadcasting): reduce_sum + reshape.
  // Shapes are taken by value: emitting a node may move the graph's values (and their shapes).
  ValueId unbroadcast(ValueId dx, Shape target);
  // Adds `dx` to input i's gradient (several consumers: the gradients are summed).
  void add_in_grad(size_t i, ValueId dx);

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw Error(Where{.file = g_.source_file, .node = node().name, .op = node().op_type},
                fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  Graph& g_;
  NodeId node_;
  std::vector<ValueId>& grads_;  // per value; grown as nodes are emitted
  std::vector<bool>& wants_;     // per value
};

// What an op written as other ops (a composite: Einsum as transposes, reshapes and a MatMul)
// sees when infer-shapes expands it: its inputs, now with shapes, and a way to append the ops it
// stands for. Each emitted node is an ONNX op whose OpDef's infer() and lower() run as it is
// emitted, so that autodiff, SBP and the fusions see ordinary ops; the last writes the
// composite's own output.
class ExpandCtx {
 public:
  ExpandCtx(Graph& g, const Node& composite, std::vector<Node>& out) : g_(g), node_(composite), out_(out) {}

  const Node& node() const { return node_; }
  const Attrs& attrs() const { return node_.attrs; }
  ValueId input(size_t i) const { return node_.inputs.at(i); }
  ValueId output(size_t i) const { return node_.outputs.at(i); }
  // Shapes are taken by value: emitting may move the graph's values.
  Shape shape(ValueId v) const { return g_.values[size_t(v)].desc.shape; }
  // Appends a node of ONNX op `op` (or of ours, domain-qualified: "of.SoftmaxCrossEntropy")
  // reading `inputs`; returns its output: a new value, or `into` (the composite's output, for its
  // last node).
  ValueId emit(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {}, ValueId into = kNoValue);
  // The node emitted last reads its input i as data never trained, whatever the model names it
  // (a loss's class weights, a buffer): Node::state_inputs, as BatchNorm's running statistics.
  void untrained_input(size_t i);
  // A constant 1-D int64 tensor (Reshape's shape, Gather's indices).
  ValueId ints(const std::vector<int64_t>& v);
  // A constant f32 tensor of `shape` holding `values`.
  ValueId floats(Shape shape, const std::vector<float>& values);

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw Error(Where{.file = g_.source_file, .node = node_.name, .op = node_.op_type}, fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  Graph& g_;
  const Node& node_;
  std::vector<Node>& out_;
  // Numbers the constants this expansion makes, so that their names depend on this node alone: a
  // training plan and its evaluation plan (graphs of other sizes) name, and share, the same ones.
  int constants_ = 0;
};

// The values an attribute may take, checked (check_attrs) before anything reads it, so a model
// with Gemm transB = 7 or a NaN epsilon fails naming the node, the op and the attribute instead
// of compiling into something else. Axes, whose range depends on a rank, are checked where they
// are normalized (OpCtx::axis).
struct AttrRule {
  enum class Kind { boolean, integer, integers, real };
  Kind kind;
  std::string_view name;
  double lo = 0, hi = 0;  // inclusive; integer: the value, integers: each value, real: finite and within
};
inline constexpr double kMaxDim = double(int64_t(1) << 31);  // a bound on strides, pads, kernels
inline constexpr double kMaxAxis = 64;                      // |axis|: beyond any rank (ranks are checked later)
inline constexpr double kMaxInt = 9.2e18;                    // about int64's largest: no upper bound
inline AttrRule bool_attr(std::string_view name) { return {AttrRule::Kind::boolean, name, 0, 1}; }
inline AttrRule int_attr(std::string_view name, double lo, double hi) { return {AttrRule::Kind::integer, name, lo, hi}; }
inline AttrRule ints_attr(std::string_view name, double lo, double hi) { return {AttrRule::Kind::integers, name, lo, hi}; }
inline AttrRule real_attr(std::string_view name, double lo = -3.4e38, double hi = 3.4e38) {
  return {AttrRule::Kind::real, name, lo, hi};
}

struct OpDef {
  std::string_view onnx_type;
  void (*infer)(OpCtx&);
  void (*lower)(OpCtx&);
  // The gradient rule; nullptr: training through this op is not supported yet.
  void (*grad)(GradCtx&) = nullptr;
  std::vector<AttrRule> attrs = {};  // what check_attrs enforces (attributes not listed: unchecked)
  // The kernels this op lowers to and its gradient emits that no other op owns, each with its
  // SBP rule or an explicit broadcast_only (compiler/parallel/signatures.h).
  std::vector<KernelSbp> kernels = {};
  // A composite: infer-shapes replaces the node by the ops this emits (its lower only normalizes
  // attributes for it; its gradient is theirs).
  void (*expand)(ExpandCtx&) = nullptr;
  // When set, the op is a composite only where this holds (MaxPool over three spatial axes, after
  // infer); elsewhere it lowers to its own kernel.
  bool (*expands)(const OpCtx&) = nullptr;
};

// Whether `node` (inferred) is replaced by its OpDef's expansion.
bool is_composite(const OpDef& def, const OpCtx& node);

// Fails through ctx when one of the node's attributes breaks its OpDef's rules (infer-shapes
// calls it for every node before folding or inferring it).
void check_attrs(const OpDef& def, const OpCtx& ctx);

// Shared shape rules (compiler/ops/op_ctx.cpp).
// numpy multidirectional broadcasting; fails through ctx when the shapes do not broadcast.
Shape broadcast_shapes(const OpCtx& ctx, const Shape& a, const Shape& b);
// A composite's lower when it has no attributes to normalize for expand(): nothing.
void lower_composite(OpCtx& ctx);

}  // namespace of::compiler
