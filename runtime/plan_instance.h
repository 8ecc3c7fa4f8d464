// SPDX-License-Identifier: Apache-2.0
// A plan made ready to run: loaded and verified, its arenas allocated once, and every stored
// tensor (variables and the blobs of persistent registers) filled from the weights file. Both
// ofrun's inference path (run.cpp) and training (train/) start from one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/safetensors.h"
#include "common/shape.h"
#include "kernels/kernel.h"
#include "runtime/actors/actions.h"
#include "runtime/actors/protocol.h"
#include "runtime/gpu/gpu_devices.h"
#include "runtime/transport/routes.h"
#include "schemas/plan_model.h"
#include "schemas/shared_memory.h"

namespace of::runtime {

// A tensor the run starts from and (for persistent ones) evolves, and where it lives: in a
// parallel plan each device holds a box of it (replicas hold the same box), else one holds all.
struct StoredTensor {
  struct Box {
    uint8_t* data;
    Shape shape;
    std::vector<int64_t> begin;
    bool gpu = false;  // `data` is GPU memory: copied through the host (gpu_copy)
  };
  std::string key;  // its name in weights files and checkpoints
  TensorDesc desc;  // the whole tensor
  uint64_t bytes = 0;
  std::vector<Box> boxes;
  bool persistent = false;  // a blob of a persistent register (trained weight or optimizer state)
  // A tensor of the model's state_dict (checkpoints' model.safetensors): a trained weight, a
  // BatchNorm running statistic, a frozen parameter or a buffer; not optimizer state.
  bool weight = false;
  // A buffer no task reads (folded into the plan's constants at compile time): carried into
  // checkpoints as it is; loading other contents into it is refused.
  bool buffer = false;
  // Optimizer state that starts as zeros (not in the weights file): zeroed at load.
  bool zeros = false;
  // Which checkpoint shard holds it: the index among the plan's snapshot tasks of the one that
  // reads it (a persistent tensor), else 0 (a constant or buffer: the first snapshot's rank
  // writes those, from the weights file's copy).
  int32_t shard = 0;

  // Fills every box from the whole tensor (`bytes` bytes) / assembles the whole tensor.
  void scatter(const uint8_t* whole) const;
  void zero() const;  // every box
  void gather(uint8_t* whole) const;
};

class PlanInstance {
 public:
  // Throws of::Error for a bad plan or weights file. `rank` >= 0: this process is that rank of a
  // multi-process run, and holds only what its tasks touch: its own arenas and variables, the
  // landing slots of registers other ranks send it, and where the first snapshot task runs a
  // copy of every other rank's constants for checkpoints (persistent tensors' boxes on other
  // ranks reach checkpoints at save time: runtime/train/checkpoint.h). -1: one process runs
  // every rank.
  // `canary`: arenas start filled with runtime/memory/high_water.h's kCanary instead of zeros, so
  // that a memory report can see which bytes a run touched.
  // A plan for GPUs gets its GPUs' arenas in device memory and their kernels' CUDA twins
  // (runtime/gpu/gpu_devices.h). `emulate_gpus` (ofrun --emulate-gpus, testing): instead, its GPUs'
  // arenas in host memory and their kernels the CPU twins (stream.h runs their acts as a stream).
  explicit PlanInstance(const std::string& plan_path, int32_t rank = -1, bool canary = false, bool emulate_gpus = false);

  const plan::Plan& plan() const { return plan_; }
  const std::string& path() const { return path_; }
  uint8_t* const* arenas() const { return arena_ptrs_.data(); }  // null entries: other ranks' arenas
  // A multi-process run's rank (-1: this process runs all), its view of the plan and the slots
  // other ranks' registers land in here (per register; both null in a one-process run).
  int32_t rank() const { return rank_; }
  const transport::RankRoutes* routes() const { return routes_.get(); }
  const std::vector<std::vector<uint8_t*>>* landing() const { return routes_ ? &landing_ : nullptr; }
  // Whether this process runs task t.
  bool runs(const plan::Task& t) const { return !routes_ || routes_->local(t.id); }
  // The plan file's checksum: ranks of one job must run the same plan.
  uint32_t plan_crc32() const { return plan_crc32_; }
  const std::vector<StoredTensor>& stored() const { return stored_; }
  // The lead source (the one that reads nothing), and every source: a plan of several ranks has
  // one on each rank that reads graph inputs, holding its rows of them (source_box).
  const plan::Task& source() const;
  std::vector<const plan::Task*> sources() const;
  // Which bytes of one piece of a graph input blob k of source task `src` holds: the whole
  // tensor's descriptor and a byte window of it (rows, since a source's box splits the first
  // axis at most). Fails naming the plan when a box is not such a window.
  struct SourceBox {
    TensorDesc whole;
    uint64_t begin = 0, bytes = 0;
  };
  SourceBox source_box(const plan::Task& src, size_t k) const;
  const plan::Task& sink() const;
  // The snapshot tasks, in task order: snapshot k writes checkpoint shard k (StoredTensor::shard).
  // A plan of one rank has at most one; a plan of several, one on each rank that checkpoints.
  const std::vector<const plan::Task*>& snapshots() const { return snapshots_; }
  // Where blob `blob` of register r (slot 0: a persistent register's one) is here; null when
  // another rank holds it.
  const uint8_t* blob_data(plan::RegstId r, int32_t blob) const;
  // Whether register r's slots are GPU memory (read them with gpu_copy).
  bool in_gpu_memory(plan::RegstId r) const;
  // The GPUs this process runs (null: none, or emulated), and the GPU whose stream runs task t
  // (real or emulated): its own device, or for a transfer task on the host the GPU it copies
  // from; -1 for none.
  const GpuDevices* gpus() const { return gpus_.get(); }
  int32_t gpu_of(const plan::Task& t) const;
  // Frees the GPUs' arenas, streams and page-locked host memory once this instance has run for
  // the last time (training's end, before the evaluation plan takes GPU memory of its own): its
  // GPU arenas and the stored tensors in them are gone; nothing may run or read them after.
  void free_gpu_memory();
  // The shard of stored tensor `key` (-1: none here).
  int32_t shard_of(const std::string& key) const;
  // The descriptor of input k of task t.
  TensorDesc input_desc(const plan::Task& t, size_t k) const;
  // With `canary` (ofrun --memory-report): the heap's bytes in use before the plan loaded
  // (runtime/memory/heap_peak.h); 0 otherwise.
  uint64_t heap_before_load() const { return heap_before_; }
  // What of the heap holds the data set read into memory (training): not counted as the run's.
  void set_heap_data(uint64_t bytes) { heap_data_ = bytes; }
  uint64_t heap_data() const { return heap_data_; }

  // Overwrites stored tensors with the same-named entries of `file` (named `path` in errors).
  // Every entry must be a stored tensor of matching dtype and shape; with `require_all`, every
  // tensor selected by `which` must be present. Fails naming the first tensor that does not match.
  enum class Which { all, weights, persistent };
  void load_tensors(const SafetensorsFile& file, const std::string& path, Which which, bool require_all);
  // Whether entry `key` of `file` is an all-zero SGD momentum buffer (as checkpoints of earlier
  // versions kept without momentum) that this plan, keeping none, may skip.
  bool unused_zero_momentum(const SafetensorsFile& file, const std::string& key) const;

  // A prepared kernel for compute task t (shapes checked; its scratch in arena room where some is
  // free while it acts, scratch_rooms).
  // `base`: the run's seed and first piece (see KernelAction).
  std::unique_ptr<Action> make_kernel_action(const plan::Task& t, int kernel_threads, kernels::GemmBackend gemm,
                                             kernels::RunCtx base = {}) const;
  // The copy of transfer task t (in one process every device's arena is here).
  std::unique_ptr<Action> make_transfer_action(const plan::Task& t) const;

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  uint64_t heap_before_ = 0;  // first: read before the plan loads
  uint64_t heap_data_ = 0;
  plan::Plan plan_;
  std::string path_;
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> arenas_;
  std::vector<uint8_t*> arena_ptrs_;
  // Where task t's kernel may keep `bytes` of scratch per act: room in a share group of t that
  // nothing uses while t acts (plan::scratch_room), or none (the thread's workspace).
  ScratchRooms scratch_rooms(const plan::Task& t, uint64_t bytes) const;
  // Share groups' orders, made when a kernel first asks for scratch room in one (scratch_rooms).
  mutable std::vector<std::unique_ptr<plan::GroupOrder>> orders_;
  mutable std::vector<std::vector<plan::Scratch>> placed_;  // per group: the rooms given so far
  std::vector<StoredTensor> stored_;
  std::vector<const plan::Task*> snapshots_;
  std::vector<std::vector<uint8_t>> buffers_;  // the contents of the buffer tensors
  int32_t rank_ = -1;
  bool emulate_gpus_ = false;
  uint32_t plan_crc32_ = 0;
  std::unique_ptr<transport::RankRoutes> routes_;
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> landing_buffers_;  // also other ranks' variables' copies
  std::vector<std::vector<uint8_t*>> landing_;
  // Last: its device memory is freed and the host arenas it pinned are unpinned before those go.
  std::unique_ptr<GpuDevices> gpus_;
};

}  // namespace of::runtime
