// SPDX-License-Identifier: Apache-2.0
// The plan as plain C++ values: what ofc builds (lower-to-tasks, plan-memory) and what ofrun and
// ofdump get back from schemas/plan_codec.h. Tasks (one per op per device, plus source and
// sink), the registers they write, the variables they read, and the arenas both live in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/attrs.h"
#include "common/shape.h"

namespace of::plan {

using TaskId = int32_t;
using RegstId = int32_t;
using VariableId = int32_t;

// snapshot: reads every persistent register to copy a consistent version of the training state
// (checkpoints during a run).
// A transfer task reads one register of another device and writes a mirror of it (same blobs,
// same layout) in its own device's arena: the only task that touches two devices.
enum class TaskKind : int8_t { source = 0, compute = 1, sink = 2, snapshot = 3, transfer = 4, collective = 5 };

enum class InputKind : int8_t {
  regst = 0,     // blob `blob` of regsts[id]
  variable = 1,  // variables[id]
  own = 2,       // blob `blob` of regsts[id], which this task writes: read, then overwritten in place
};

struct TaskInput {
  InputKind kind = InputKind::regst;
  int32_t id = 0;
  int32_t blob = 0;
  Shape view = {};  // empty, or the shape the blob is read as (plan.fbs)
};

struct Task {
  TaskId id = 0;
  TaskKind kind = TaskKind::compute;
  std::string name;   // ONNX node name, or "source"/"sink"
  std::string op;     // ONNX op type
  std::string kernel;
  Attrs attrs;
  int32_t device = 0;  // index into Plan::devices
  int32_t stream = 0;
  std::vector<TaskInput> inputs;
  std::vector<RegstId> in_regsts;   // distinct, first-use order
  std::vector<RegstId> out_regsts;
  std::vector<std::string> io_names;  // source: graph inputs; sink: graph outputs
  int32_t stage = 0;  // pipeline stage (its device's)
  bool once_per_version = false;  // reads a persistent input's version for one piece (plan.fbs)
};

struct Blob {
  int32_t tensor = 0;  // logical tensor (graph value id)
  TensorDesc desc;
  uint64_t offset = 0;  // in the slot
  uint64_t bytes = 0;
};

struct Regst {
  RegstId id = 0;
  TaskId producer = 0;
  std::vector<TaskId> consumers;
  int32_t slots = 1;
  uint64_t slot_bytes = 0;
  int32_t arena = 0;
  std::vector<uint64_t> offsets;  // per slot; filled by plan-memory
  std::vector<Blob> blobs;
  // One slot living across pieces (a weight and its optimizer state): the producer lends version
  // 0 at start and version n+1 after acting on piece n. See plan.fbs.
  bool persistent = false;
  // Micro-batches (see plan.fbs): the producer acts this many times per piece it emits (summing
  // gradients into one slot), and a persistent register's readers read each version for this
  // many pieces.
  int32_t acts_per_piece = 1;
  int32_t pieces_per_version = 1;
  int32_t share_group = -1;  // index into Plan::share_groups; -1: bytes of its own
};

// Registers of one device sharing bytes (plan.fbs; the rule is schemas/shared_memory.h): its
// tasks, ascending, and the frame registers from the first task to the ends every task reaches,
// which bound how many pieces are in the group at once.
struct ShareGroup {
  int32_t slots = 1;
  std::vector<TaskId> tasks;
  std::vector<RegstId> frames;
};

struct Variable {
  VariableId id = 0;
  int32_t tensor = 0;
  std::string key;  // entry in the weights file
  int32_t arena = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct DeviceRef {
  int32_t rank = 0;
  int8_t kind = 0;  // 0 cpu, 1 cuda (plan.fbs DeviceKind)
  int32_t index = 0;
};

struct Arena {
  int32_t id = 0;
  int32_t device = 0;  // index into Plan::devices
  uint64_t bytes = 0;
};

struct LogicalTensor {
  std::string name;
  TensorDesc desc;
  // A box of a larger tensor (a weight split over devices): the whole tensor's shape and where
  // the box begins in it. Empty when the tensor is whole. Weights files and checkpoints hold
  // whole tensors; each device loads and saves its box.
  Shape full_shape;
  std::vector<int64_t> shard_begin;
  bool model = false;  // a state_dict tensor: checkpoints' model.safetensors (see plan.fbs)
  bool zeros = false;  // optimizer state starting as zeros, not in the weights file (see plan.fbs)
};

// For people (ofdump --sbp): a tensor of the model as the user wrote it, and how it is laid out.
struct TensorLayout {
  std::string name;
  TensorDesc desc;
  std::string placement;  // "cpu:0-3 [2,2]"
  std::string sbp;        // "(S(0), B)"
  int32_t stage = 0;
};

// For people: one layout conversion the compiler inserted, and what it moves.
struct Boxing {
  std::string tensor, kind, from, to, consumer;
  uint64_t bytes = 0;     // bytes that leave their device, per piece
  bool backward = false;  // read by the backward pass or an optimizer update
};

enum class JobKind : int8_t { infer = 0, train = 1, eval = 2 };

struct Job {
  JobKind kind = JobKind::infer;
  int64_t batch = 1;   // rows per piece of the first graph input
  int64_t pieces = 0;  // default pieces to stream (0: as many as the input holds)
  uint64_t seed = 0;
  // Training and evaluation (see plan.fbs).
  std::string label;         // graph input holding labels / targets
  int32_t micro_batches = 1; // pieces per optimizer step
  std::string optimizer;     // as given to ofc, for people
  float lr = 0;              // base learning rate
  std::string schedule;      // learning-rate schedule spec
  std::string eval_plan;     // companion evaluation plan, relative to this plan's folder
};

// The plan compiled again with `flags` added: each arena's peak then (plan.fbs).
struct MemoryOption {
  std::string flags;
  std::vector<uint64_t> peaks;  // per arena, in Plan::arenas' order
};

// A parallel strategy ofc --auto weighed (plan.fbs).
struct Candidate {
  std::string flags;
  double step_seconds = 0;
  uint64_t peak_bytes = 0;  // the largest device's arena
  std::string refused;      // why it was not compiled or did not fit; empty if it was weighed
};

// ofc's predicted step time and the costs it used; with --auto, the candidates best first.
struct Prediction {
  double step_seconds = 0;  // 0: not predicted
  std::string costs;
  std::vector<Candidate> candidates;
};

struct Plan {
  uint32_t version = 0;
  std::string model;
  Job job;
  std::vector<LogicalTensor> tensors;
  std::vector<DeviceRef> devices;
  std::vector<Task> tasks;
  std::vector<Regst> regsts;
  std::vector<Variable> variables;
  std::vector<Arena> arenas;
  std::vector<TensorLayout> layouts;  // empty for a one-device plan
  std::vector<Boxing> boxings;
  std::vector<std::string> buffers;  // folded into constants; checkpoints carry them (plan.fbs)
  std::vector<std::string> carried;  // unread model tensors checkpoints pass on
  std::vector<ShareGroup> share_groups;
  std::vector<MemoryOption> memory_options;  // empty unless ofc --memory-options
  Prediction prediction;
  std::string weights;  // companion safetensors file, relative to the plan's folder
  uint64_t weights_bytes = 0;
  uint32_t weights_crc32 = 0;
};

// Every blob and slot starts at this alignment (a cache line; AVX-512 loads).
inline constexpr uint64_t kAlignment = 64;
inline uint64_t align_up(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// How people read a device: "cpu:1" in a one-rank plan, "rank1/cpu:0" when it has several ranks.
std::string device_label(const Plan& p, int32_t device);

// What a task input is as its kernel reads it: a register blob (as its view, if it has one) or a
// variable's tensor. A verified plan's indices only.
TensorDesc input_desc(const Plan& p, const TaskInput& in);

// The registers a compute task writes data to: the leading ones with blobs (its own in-place state,
// a persistent register, then what it streams; or only one of them). The rest are control
// registers (share groups' order), without blobs.
size_t data_regsts(const Plan& p, const Task& t);
// What the task's kernel writes, as it sees its outputs: the blobs of those registers in order.
std::vector<TensorDesc> output_descs(const Plan& p, const Task& t);

}  // namespace of::plan
