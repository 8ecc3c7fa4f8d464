// SPDX-License-Identifier: Apache-2.0
#include "runtime/plan_instance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "common/box_copy.h"
#include "common/error.h"
#include "common/file_util.h"
#include "kernels/registry.h"
#include "runtime/actors/actions.h"
#include "runtime/memory/heap_peak.h"
#include "runtime/memory/high_water.h"
#include "runtime/plan/load.h"

namespace of::runtime {

void PlanInstance::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

// GPU boxes go through host memory (loading and checkpoints only: never an act).
void StoredTensor::scatter(const uint8_t* whole) const {
  const auto element = size_t(dtype_size(desc.dtype));
  std::vector<uint8_t> staged;
  for (const Box& b : boxes) {
    if (!b.gpu) {
      copy_box_out(whole, desc.shape, b.begin, b.shape, element, b.data);
      continue;
    }
    staged.resize(size_t(numel(b.shape)) * element);
    copy_box_out(whole, desc.shape, b.begin, b.shape, element, staged.data());
    gpu_copy(b.data, staged.data(), staged.size());
  }
}

void StoredTensor::zero() const {
  for (const Box& b : boxes) {
    const size_t bytes = size_t(numel(b.shape)) * size_t(dtype_size(desc.dtype));
    if (b.gpu) gpu_fill(b.data, 0, bytes);
    else std::memset(b.data, 0, bytes);
  }
}

void StoredTensor::gather(uint8_t* whole) const {
  // Boxes come in device order. Replicas of a broadcast tensor are equal, except a device's own
  // state (BatchNorm's running statistics under data parallelism, as in torch's DDP): there the
  // checkpoint keeps the first device's, as DDP keeps rank 0's. Copying from the last box to the
  // first makes the first device's bytes the ones that stay.
  const auto element = size_t(dtype_size(desc.dtype));
  std::vector<uint8_t> staged;
  for (auto b = boxes.rbegin(); b != boxes.rend(); ++b) {
    const uint8_t* from = b->data;
    if (b->gpu) {
      staged.resize(size_t(numel(b->shape)) * element);
      gpu_copy(staged.data(), b->data, staged.size());
      from = staged.data();
    }
    copy_box_in(from, b->shape, b->begin, desc.shape, element, whole);
  }
}

PlanInstance::PlanInstance(const std::string& plan_path, int32_t rank, bool canary, bool emulate_gpus)
    : heap_before_(canary ? heap_in_use() : 0), plan_(load_plan(plan_path)), path_(plan_path), rank_(rank), emulate_gpus_(emulate_gpus) {
  const int32_t ranks = transport::plan_ranks(plan_);
  const bool has_gpus = std::any_of(plan_.devices.begin(), plan_.devices.end(), [](const plan::DeviceRef& d) { return d.kind != 0; });
  if (has_gpus && !emulate_gpus) {
    // Between processes a GPU register would need NCCL or staging through the host transport.
    if (rank >= 0 && ranks > 1)
      fail({.file = path_}, "places tasks on GPUs of {} ranks; GPU plans run as one process so far (NCCL between processes is not built): run it without --launch-local",
           ranks);
    gpus_ = std::make_unique<GpuDevices>(plan_, rank, path_);
  }
  if (ranks > 1 && rank < 0)  // said once per plan, so that nobody mistakes this for a multi-process run
    fmt::print(stderr, "ofrun: note: {}: the plan has {} ranks; this process runs all of them (ofrun --launch-local runs one process per rank)\n",
               path_, ranks);
  if (rank >= ranks) fail({.file = path_}, "is a plan of {} rank{}: there is no rank {}", ranks, ranks == 1 ? "" : "s", rank);
  {
    const std::vector<uint8_t> bytes = read_file(plan_path);
    plan_crc32_ = crc32_of(bytes.data(), bytes.size());
  }
  auto allocate = [&](uint64_t bytes, const std::string& field, uint8_t fill = 0) {
    uint64_t size = std::max<uint64_t>(plan::align_up(bytes), plan::kAlignment);
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(plan::kAlignment, size));
    if (!p) fail({.file = path_, .field = field}, "cannot allocate {} bytes", size);
    std::memset(p, fill, size);  // touch every page now, not in the first act
    return p;
  };
  if (rank >= 0) routes_ = std::make_unique<transport::RankRoutes>(plan_, rank);
  for (const plan::Arena& a : plan_.arenas) {
    if (rank >= 0 && plan_.devices[size_t(a.device)].rank != rank) {  // another rank's: not here
      arenas_.emplace_back(nullptr);
      arena_ptrs_.push_back(nullptr);
      continue;
    }
    if (gpus_ && gpus_->holds(a.device)) {  // device memory, owned by gpus_
      arenas_.emplace_back(nullptr);
      arena_ptrs_.push_back(gpus_->allocate(a.device, std::max<uint64_t>(plan::align_up(a.bytes), plan::kAlignment),
                                            canary ? kCanary : 0, fmt::format("arenas[{}]", a.id)));
      continue;
    }
    uint8_t* p = allocate(a.bytes, fmt::format("arenas[{}]", a.id), canary ? kCanary : 0);
    // Copies between this arena and a GPU (transfer tasks) are asynchronous only from page-locked memory.
    if (gpus_) gpus_->pin(p, std::max<uint64_t>(plan::align_up(a.bytes), plan::kAlignment));
    arenas_.emplace_back(p);
    arena_ptrs_.push_back(p);
  }
  // The slots other ranks send here, each register's slots one after another.
  if (routes_) {
    landing_.resize(plan_.regsts.size());
    for (plan::RegstId r : routes_->landed()) {
      const plan::Regst& regst = plan_.regsts[size_t(r)];
      if (!routes_->lands_bytes(r)) {  // only paces readers here, or a replica this rank holds itself
        landing_[size_t(r)].assign(size_t(regst.slots), nullptr);
        continue;
      }
      const uint64_t stride = plan::align_up(std::max<uint64_t>(regst.slot_bytes, 1));
      uint8_t* p = allocate(stride * uint64_t(regst.slots), fmt::format("regsts[{}] (landing)", r));
      landing_buffers_.emplace_back(p);
      for (int32_t k = 0; k < regst.slots; ++k) landing_[size_t(r)].push_back(p + stride * uint64_t(k));
    }
  }
  // The lowest-rank snapshot task that reads a box of a persistent tensor writes it whole (the
  // others' savers hand it their boxes: checkpoint.h); the first one also writes the constants,
  // and copies other ranks' ones here once.
  for (const plan::Task& t : plan_.tasks)
    if (t.kind == plan::TaskKind::snapshot) snapshots_.push_back(&t);
  std::map<std::string, int32_t> shard_of;
  auto rank_of_task = [&](const plan::Task* t) { return plan_.devices[size_t(t->device)].rank; };
  for (size_t k = 0; k < snapshots_.size(); ++k)
    for (const plan::TaskInput& in : snapshots_[k]->inputs) {
      auto [it, fresh] = shard_of.emplace(plan_.tensors[size_t(plan_.regsts[size_t(in.id)].blobs[size_t(in.blob)].tensor)].name, int32_t(k));
      if (!fresh && rank_of_task(snapshots_[k]) < rank_of_task(snapshots_[size_t(it->second)])) it->second = int32_t(k);
    }
  const bool keeps_constants = !routes_ || (!snapshots_.empty() && routes_->local(snapshots_[0]->id));
  // Boxes of one tensor on several devices share its key and become one StoredTensor.
  auto on_gpu = [&](int32_t arena) { return gpus_ && gpus_->holds(plan_.arenas[size_t(arena)].device); };
  auto add = [&](int32_t tensor, uint8_t* data, bool persistent, bool weight, bool gpu) {
    const plan::LogicalTensor& t = plan_.tensors[size_t(tensor)];
    const bool boxed = !t.full_shape.empty();
    const TensorDesc whole{boxed ? t.full_shape : t.desc.shape, t.desc.dtype};
    StoredTensor::Box box{data, t.desc.shape, boxed ? t.shard_begin : std::vector<int64_t>(t.desc.shape.size(), 0), gpu};
    auto it = std::find_if(stored_.begin(), stored_.end(), [&](const StoredTensor& s) { return s.key == t.name; });
    if (it == stored_.end()) {
      const auto shard = shard_of.find(t.name);
      stored_.push_back(StoredTensor{.key = t.name, .desc = whole, .bytes = uint64_t(whole.bytes()), .boxes = {box},
                                     .persistent = persistent, .weight = weight, .zeros = t.zeros,
                                     .shard = persistent && shard != shard_of.end() ? shard->second : 0});
      return;
    }
    if (it->desc.shape != whole.shape || it->desc.dtype != whole.dtype || it->persistent != persistent || it->weight != weight)
      fail({.file = path_, .field = "tensor '" + t.name + "'"}, "its boxes disagree on the whole tensor");
    it->boxes.push_back(std::move(box));
  };
  for (const plan::Variable& v : plan_.variables) {
    uint8_t* at = arena_ptrs_[size_t(v.arena)] ? arena_ptrs_[size_t(v.arena)] + v.offset : nullptr;
    const bool gpu = at && on_gpu(v.arena);
    if (!at && keeps_constants) {
      at = allocate(v.bytes, fmt::format("variables[{}] (copy)", v.id));
      landing_buffers_.emplace_back(at);
    }
    if (at) add(v.tensor, at, false, plan_.tensors[size_t(v.tensor)].model, gpu);
  }
  for (const plan::Regst& r : plan_.regsts) {
    if (!r.persistent) continue;
    uint8_t* slot = arena_ptrs_[size_t(r.arena)] ? arena_ptrs_[size_t(r.arena)] + r.offsets[0] : nullptr;
    const bool gpu = slot && on_gpu(r.arena);
    if (!slot && routes_ && !landing_[size_t(r.id)].empty()) slot = landing_[size_t(r.id)][0];
    if (!slot) continue;  // another rank's, whose bytes never come here (or a replica of one held here)
    for (size_t b = 0; b < r.blobs.size(); ++b)
      add(r.blobs[b].tensor, slot + r.blobs[b].offset, true, plan_.tensors[size_t(r.blobs[b].tensor)].model, gpu);
  }

  // The weights file: its size and checksum as the plan recorded them, then every stored tensor.
  std::string weights = (std::filesystem::path(plan_path).parent_path() / plan_.weights).string();
  std::vector<uint8_t> bytes = read_file(weights);
  if (bytes.size() != plan_.weights_bytes)
    fail({.file = weights}, "weights file has {} bytes, the plan expects {} (was it replaced or truncated?)", bytes.size(), plan_.weights_bytes);
  if (crc32_of(bytes.data(), bytes.size()) != plan_.weights_crc32) fail({.file = weights}, "weights checksum mismatch: the file is corrupt or belongs to another plan");
  SafetensorsFile file = parse_safetensors(std::move(bytes), weights);
  // Buffers take their shape from the weights file (checked above by size and checksum).
  buffers_.reserve(plan_.buffers.size() + plan_.carried.size());
  for (size_t i = 0; i < plan_.buffers.size() + plan_.carried.size(); ++i) {
    const bool folded = i < plan_.buffers.size();
    const std::string& key = folded ? plan_.buffers[i] : plan_.carried[i - plan_.buffers.size()];
    const std::string field = folded ? fmt::format("buffers[{}]", i) : fmt::format("carried[{}]", i - plan_.buffers.size());
    auto it = file.entries.find(key);
    if (it == file.entries.end()) fail({.file = weights, .field = "tensor '" + key + "'"}, "missing (plan {})", field);
    if (std::any_of(stored_.begin(), stored_.end(), [&](const StoredTensor& s) { return s.key == key; }))
      fail({.file = path_, .field = field}, "'{}' is also a variable, a register or another buffer of the plan", key);
    const TensorDesc desc{it->second.shape, it->second.dtype};
    std::vector<uint8_t>& data = buffers_.emplace_back(size_t(desc.bytes()));
    stored_.push_back(StoredTensor{.key = key, .desc = desc, .bytes = uint64_t(desc.bytes()),
                                   .boxes = {StoredTensor::Box{data.data(), desc.shape, std::vector<int64_t>(desc.shape.size(), 0)}},
                                   .persistent = false, .weight = true, .buffer = folded});
  }
  // A training plan's weights file also serves its evaluation plan, so it may hold more.
  for (const StoredTensor& t : stored_) {
    if (t.zeros) {
      if (!t.persistent || t.weight) fail({.file = path_, .field = "tensor '" + t.key + "'"}, "starts as zeros but is no optimizer state");
      t.zero();
      continue;
    }
    auto it = file.entries.find(t.key);
    if (it == file.entries.end()) fail({.file = weights, .field = "tensor '" + t.key + "'"}, "missing");
    if (it->second.dtype != t.desc.dtype || it->second.shape != t.desc.shape)
      fail({.file = weights, .field = "tensor '" + t.key + "'"}, "is {} {}, the plan expects {} {}", dtype_name(it->second.dtype),
           shape_str(it->second.shape), dtype_name(t.desc.dtype), shape_str(t.desc.shape));
    t.scatter(file.ptr(it->second));
  }
}

const plan::Task& PlanInstance::source() const {
  for (const plan::Task& t : plan_.tasks)
    if (t.kind == plan::TaskKind::source && t.in_regsts.empty()) return t;
  internal_error(__FILE__, __LINE__, "verified plan without a source");
}

std::vector<const plan::Task*> PlanInstance::sources() const {
  std::vector<const plan::Task*> out;
  for (const plan::Task& t : plan_.tasks)
    if (t.kind == plan::TaskKind::source) out.push_back(&t);
  return out;
}

PlanInstance::SourceBox PlanInstance::source_box(const plan::Task& src, size_t k) const {
  const plan::Blob& b = plan_.regsts[size_t(src.out_regsts[0])].blobs[k];
  const plan::LogicalTensor& t = plan_.tensors[size_t(b.tensor)];
  if (t.full_shape.empty()) return SourceBox{b.desc, 0, b.bytes};
  const Shape& box = b.desc.shape;
  bool rows = !box.empty() && box[0] > 0 && box.size() == t.full_shape.size();
  for (size_t d = 1; rows && d < box.size(); ++d) rows = box[d] == t.full_shape[d] && t.shard_begin[d] == 0;
  if (!rows && t.full_shape != box)
    fail({.file = path_, .field = "tensors[" + std::to_string(b.tensor) + "]"}, "source '{}' holds box {} at {} of input '{}' {}: not whole rows",
         src.name, shape_str(box), shape_str(t.shard_begin), t.name, shape_str(t.full_shape));
  const TensorDesc whole{t.full_shape, b.desc.dtype};
  if (!rows) return SourceBox{whole, 0, b.bytes};
  // The verifier places the tensor's own box inside the whole; the blob's box is checked here.
  if (t.shard_begin[0] > t.full_shape[0] - box[0])
    fail({.file = path_, .field = "tensors[" + std::to_string(b.tensor) + "]"}, "source '{}' holds rows [{}, +{}) of input '{}' {}: outside it",
         src.name, t.shard_begin[0], box[0], t.name, shape_str(t.full_shape));
  const uint64_t row = b.bytes / uint64_t(box[0]);
  return SourceBox{whole, uint64_t(t.shard_begin[0]) * row, b.bytes};
}

const uint8_t* PlanInstance::blob_data(plan::RegstId r, int32_t blob) const {
  const plan::Regst& regst = plan_.regsts[size_t(r)];
  const uint8_t* arena = arena_ptrs_[size_t(regst.arena)];
  return arena ? arena + regst.offsets[0] + regst.blobs[size_t(blob)].offset : nullptr;
}

void PlanInstance::free_gpu_memory() {
  if (!gpus_) return;
  for (size_t a = 0; a < plan_.arenas.size(); ++a)
    if (gpus_->holds(plan_.arenas[a].device)) arena_ptrs_[a] = nullptr;
  for (StoredTensor& t : stored_)
    t.boxes.erase(std::remove_if(t.boxes.begin(), t.boxes.end(), [](const StoredTensor::Box& b) { return b.gpu; }), t.boxes.end());
  gpus_.reset();
}

bool PlanInstance::in_gpu_memory(plan::RegstId r) const {
  const plan::Regst& regst = plan_.regsts[size_t(r)];
  return gpus_ && arena_ptrs_[size_t(regst.arena)] && gpus_->holds(plan_.arenas[size_t(regst.arena)].device);
}

int32_t PlanInstance::gpu_of(const plan::Task& t) const {
  auto gpu = [&](int32_t d) {
    if (gpus_) return gpus_->holds(d);
    return emulate_gpus_ && d >= 0 && plan_.devices[size_t(d)].kind != 0 && (rank_ < 0 || plan_.devices[size_t(d)].rank == rank_);
  };
  if (gpu(t.device)) return t.device;
  if (t.kind == plan::TaskKind::transfer && !t.in_regsts.empty()) {
    const int32_t from = plan_.arenas[size_t(plan_.regsts[size_t(t.in_regsts[0])].arena)].device;
    if (gpu(from)) return from;
  }
  return -1;
}

int32_t PlanInstance::shard_of(const std::string& key) const {
  for (const StoredTensor& t : stored_)
    if (t.key == key) return t.shard;
  return -1;
}

const plan::Task& PlanInstance::sink() const {
  for (const plan::Task& t : plan_.tasks)
    if (t.kind == plan::TaskKind::sink) return t;
  internal_error(__FILE__, __LINE__, "verified plan without a sink");
}

TensorDesc PlanInstance::input_desc(const plan::Task& t, size_t k) const { return plan::input_desc(plan_, t.inputs[k]); }

bool PlanInstance::unused_zero_momentum(const SafetensorsFile& file, const std::string& key) const {
  // Checkpoints of earlier versions kept SGD's momentum buffer without momentum too; it stayed
  // zeros. A plan that keeps none skips it (nothing is lost); any other content is refused.
  const std::string suffix = ".momentum_buffer";
  if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  const std::string weight = key.substr(0, key.size() - suffix.size());
  const bool trained = std::any_of(stored_.begin(), stored_.end(), [&](const StoredTensor& t) { return t.key == weight && t.persistent; });
  const bool keeps_momentum = std::any_of(stored_.begin(), stored_.end(), [&](const StoredTensor& t) {
    return t.key.size() > suffix.size() && t.key.compare(t.key.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
  if (!trained || keeps_momentum || plan_.job.optimizer.rfind("sgd", 0) != 0) return false;
  const SafetensorsEntry& e = file.entries.at(key);
  const uint8_t* data = file.ptr(e);
  return std::all_of(data, data + e.bytes, [](uint8_t b) { return b == 0; });
}

void PlanInstance::load_tensors(const SafetensorsFile& file, const std::string& path, Which which, bool require_all) {
  auto selected = [which](const StoredTensor& t) {
    return which == Which::all || (which == Which::persistent && t.persistent) || (which == Which::weights && t.weight);
  };
  for (const StoredTensor& t : stored_) {
    if (!selected(t)) continue;
    auto it = file.entries.find(t.key);
    if (it == file.entries.end()) {
      if (require_all) fail({.file = path, .field = "tensor '" + t.key + "'"}, "missing (the plan {} needs it)", path_);
      continue;
    }
    if (it->second.dtype != t.desc.dtype || it->second.shape != t.desc.shape)
      fail({.file = path, .field = "tensor '" + t.key + "'"}, "is {} {}, the plan {} expects {} {}", dtype_name(it->second.dtype),
           shape_str(it->second.shape), path_, dtype_name(t.desc.dtype), shape_str(t.desc.shape));
  }
  for (const auto& entry : file.entries) {
    const std::string& key = entry.first;  // a plain reference: lambdas may not capture bindings (clang 14)
    auto it = std::find_if(stored_.begin(), stored_.end(), [&](const StoredTensor& t) { return t.key == key && selected(t); });
    // A rank of a multi-process run holds only its tensors; the others' are theirs to check.
    const bool elsewhere = routes_ && it == stored_.end() &&
                           std::any_of(plan_.tensors.begin(), plan_.tensors.end(), [&](const plan::LogicalTensor& t) { return t.name == key; });
    if (it == stored_.end() && !elsewhere && !unused_zero_momentum(file, key))
      fail({.file = path, .field = "tensor '" + key + "'"}, "is not a tensor of the plan {}", path_);
  }
  // A buffer was folded into the plan's constants: other contents cannot take effect.
  for (const StoredTensor& t : stored_) {
    auto it = file.entries.find(t.key);
    if (!t.buffer || !selected(t) || it == file.entries.end()) continue;
    std::vector<uint8_t> now(t.bytes);
    t.gather(now.data());
    if (std::memcmp(now.data(), file.ptr(it->second), t.bytes) != 0)
      fail({.file = path, .field = "tensor '" + t.key + "'"},
           "differs from the buffer the plan {} was compiled with (folded into its constants); recompile with it", path_);
  }
  // NaN poisons every step after it, and so does an infinity in what training updates (weights,
  // optimizer state, running statistics): refused as ofc refuses them. A constant may hold -inf
  // (a causal mask buffer); folded buffers were compared above.
  for (const StoredTensor& t : stored_) {
    auto it = file.entries.find(t.key);
    if (!selected(t) || t.buffer || it == file.entries.end() || t.desc.dtype != DType::f32) continue;
    const uint8_t* data = file.ptr(it->second);
    for (uint64_t i = 0; i < it->second.bytes / 4; ++i) {
      float x;
      std::memcpy(&x, data + 4 * i, 4);
      if (std::isnan(x) || (t.persistent && std::isinf(x)))
        fail({.file = path, .field = "tensor '" + t.key + "'"}, "holds {} at flat index {}", x, i);
    }
  }
  // Copied only once everything matched: a refused file changes nothing.
  for (const StoredTensor& t : stored_) {
    auto it = file.entries.find(t.key);
    if (selected(t) && it != file.entries.end()) t.scatter(file.ptr(it->second));
  }
}

std::unique_ptr<Action> PlanInstance::make_transfer_action(const plan::Task& t) const {
  std::vector<uint64_t> bytes;
  for (const plan::Blob& b : plan_.regsts[size_t(t.out_regsts[0])].blobs) bytes.push_back(b.bytes);
  if (const int32_t gpu = gpu_of(t); gpu >= 0 && gpus_) return gpus_->copy_action(gpu, std::move(bytes));
  return std::make_unique<TransferAction>(std::move(bytes));
}

std::unique_ptr<Action> PlanInstance::make_kernel_action(const plan::Task& t, int kernel_threads, kernels::GemmBackend gemm,
                                                         kernels::RunCtx base) const {
  std::vector<TensorDesc> ins, outs;
  for (size_t k = 0; k < t.inputs.size(); ++k) ins.push_back(input_desc(t, k));
  outs = plan::output_descs(plan_, t);
  kernels::KernelConfig cfg{t.attrs, ins, outs, t.name};
  cfg.gemm = gemm;
  if (gpus_ && gpus_->holds(t.device)) {  // the CUDA twin, prepared on its GPU (weights stay in device memory)
    gpus_->make_current(t.device);
    cfg.constants.assign(t.inputs.size(), nullptr);
    auto kernel = kernels::make_kernel(t.kernel, kernels::DeviceKind::cuda, outs[0].dtype, cfg);
    return gpus_->kernel_action(t.device, std::move(kernel), base);
  }
  // Weights never change in an inference or evaluation plan: kernels may repack them once, now.
  const bool fixed_weights = plan_.job.kind != plan::JobKind::train;
  for (const plan::TaskInput& in : t.inputs) {
    const plan::Variable* v = in.kind == plan::InputKind::variable ? &plan_.variables[size_t(in.id)] : nullptr;
    cfg.constants.push_back(v && fixed_weights ? arena_ptrs_[size_t(v->arena)] + v->offset : nullptr);
  }
  // oneDNN fixes a primitive's thread count when it is created (a jit convolution splits its
  // work for the threads it sees then, and later opens a parallel region of that many): create
  // it under the limit it will run with, or a kernel asked for 1 thread runs on every core,
  // and beside other actors' kernels oversubscribes them.
  kernels::set_kernel_threads(kernel_threads);
  auto kernel = kernels::make_kernel(t.kernel, kernels::DeviceKind::cpu, outs[0].dtype, cfg);
  ScratchRooms rooms = scratch_rooms(t, kernel->workspace_bytes());
  return std::make_unique<KernelAction>(std::move(kernel), kernel_threads, base, std::move(rooms));
}

ScratchRooms PlanInstance::scratch_rooms(const plan::Task& t, uint64_t bytes) const {
  if (bytes == 0) return {};
  orders_.resize(plan_.share_groups.size());
  placed_.resize(plan_.share_groups.size());
  for (size_t g = 0; g < plan_.share_groups.size(); ++g) {
    const plan::ShareGroup& group = plan_.share_groups[g];
    if (!std::binary_search(group.tasks.begin(), group.tasks.end(), t.id)) continue;
    // One of t's arguments in a register of the group tells an act which slot it is in.
    ScratchRooms rooms;
    const plan::Regst* member = nullptr;
    uint64_t blob_offset = 0;
    size_t arg = 0;
    for (plan::RegstId r : t.out_regsts)
      for (const plan::Blob& b : plan_.regsts[size_t(r)].blobs) {
        if (!member && plan_.regsts[size_t(r)].share_group == int32_t(g)) {
          member = &plan_.regsts[size_t(r)];
          blob_offset = b.offset;
          rooms.output = true;
          rooms.arg = arg;
        }
        ++arg;
      }
    for (size_t k = 0; k < t.inputs.size() && !member; ++k) {
      const plan::TaskInput& in = t.inputs[k];
      if (in.kind == plan::InputKind::variable || plan_.regsts[size_t(in.id)].share_group != int32_t(g)) continue;
      member = &plan_.regsts[size_t(in.id)];
      blob_offset = member->blobs[size_t(in.blob)].offset;
      rooms.arg = k;
    }
    if (!member || !arena_ptrs_[size_t(member->arena)] || plan_.arenas[size_t(member->arena)].device < 0 ||
        plan_.devices[size_t(plan_.arenas[size_t(member->arena)].device)].kind != 0)
      continue;
    if (!orders_[g]) orders_[g] = std::make_unique<plan::GroupOrder>(plan_, group.tasks);
    // Tasks that may act at once get rooms apart.
    const std::optional<std::vector<uint64_t>> room = plan::scratch_room(plan_, *orders_[g], int32_t(g), t.id, bytes, placed_[g]);
    if (!room || room->size() > member->offsets.size()) continue;
    placed_[g].push_back(plan::Scratch{t.id, bytes, *room});
    uint8_t* arena = arena_ptrs_[size_t(member->arena)];
    for (size_t s = 0; s < room->size(); ++s) {
      rooms.at.push_back(arena + member->offsets[s] + blob_offset);
      rooms.room.push_back(arena + (*room)[s]);
    }
    return rooms;
  }
  return {};
}

}  // namespace of::runtime
