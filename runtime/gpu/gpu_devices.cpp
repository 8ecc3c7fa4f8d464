// SPDX-License-Identifier: Apache-2.0
#include "runtime/gpu/gpu_devices.h"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "common/error.h"
#include "kernels/cuda/device_stream.h"
#include "runtime/actors/late_action.h"

namespace of::runtime {
namespace {

void check(cudaError_t status, const Where& where, const char* what) {
  if (status != cudaSuccess) fail(where, "cuda: {}: {}", what, cudaGetErrorString(status));
}

// The stream's callback: the act enqueued just before it has ended (stream order keeps a task's
// callbacks in act order), or the device failed. A stream callback, not a host function
// (cudaLaunchHostFunc): after a device error host functions never run and the run would wait
// forever, while callbacks still run, with the error. It makes no CUDA call, as CUDA requires.
void CUDART_CB report_completed(cudaStream_t, cudaError_t status, void* completion) {
  auto* done = static_cast<protocol::Completion*>(completion);
  if (status == cudaSuccess) done->completed();
  else done->failed(fmt::format("cuda: the device failed (error {}) in this act or one before it on the stream", int(status)));
}

// Before an act's launches, on the GPU's launcher thread: its device current (a no-op after the
// first act), and no stale launch error left to be blamed on this act's kernel.
void begin_act(kernels::DeviceStream& s) {
  const cudaError_t e = cudaSetDevice(s.device);
  if (e != cudaSuccess) throw Error(fmt::format("cuda: cudaSetDevice({}): {}", s.device, cudaGetErrorString(e)));
  (void)cudaGetLastError();
}

// Enqueues the act's end after its work and throws what the kernel or library recorded.
void finish_enqueue(kernels::DeviceStream& s, protocol::Completion* done, const char* what) {
  if (!s.failure.empty()) {
    std::string why = "cuda: " + s.failure;
    s.failure.clear();  // the run stops on this; the message has been taken
    throw Error(why);
  }
  const cudaError_t e = cudaStreamAddCallback(s.stream, report_completed, done, 0);
  if (e != cudaSuccess) throw Error(fmt::format("cuda: {}: cudaStreamAddCallback: {}", what, cudaGetErrorString(e)));
}

class GpuKernelAction final : public protocol::Action {
 public:
  GpuKernelAction(kernels::DeviceStream* stream, std::unique_ptr<kernels::Kernel> kernel, kernels::RunCtx base)
      : stream_(stream), kernel_(std::move(kernel)), base_(base) {}
  void act(int64_t piece, const void* const* in, void* const* out) override {
    begin_act(*stream_);
    const kernels::RunCtx ctx{.piece = base_.piece + piece, .seed = base_.seed, .stream = stream_};
    kernel_->run(ctx, in, out);
    finish_enqueue(*stream_, done_, "kernel");
  }
  bool completes_late() const override { return true; }
  void bind(protocol::Completion* done) override { done_ = done; }
  void drain() override { cudaStreamSynchronize(stream_->stream); }

 private:
  kernels::DeviceStream* stream_;
  std::unique_ptr<kernels::Kernel> kernel_;
  kernels::RunCtx base_;
  protocol::Completion* done_ = nullptr;
};

class GpuCopyAction final : public protocol::Action {
 public:
  GpuCopyAction(kernels::DeviceStream* stream, std::vector<uint64_t> bytes) : stream_(stream), bytes_(std::move(bytes)) {}
  void act(int64_t, const void* const* in, void* const* out) override {
    begin_act(*stream_);
    // Unified addressing tells host from device and one GPU from another: one call for every kind.
    for (size_t i = 0; i < bytes_.size(); ++i) {
      const cudaError_t e = cudaMemcpyAsync(out[i], in[i], bytes_[i], cudaMemcpyDefault, stream_->stream);
      if (e != cudaSuccess) stream_->note_failure("cudaMemcpyAsync", int(e));
    }
    finish_enqueue(*stream_, done_, "copy");
  }
  bool completes_late() const override { return true; }
  void bind(protocol::Completion* done) override { done_ = done; }
  void drain() override { cudaStreamSynchronize(stream_->stream); }

 private:
  kernels::DeviceStream* stream_;
  std::vector<uint64_t> bytes_;
  protocol::Completion* done_ = nullptr;
};

}  // namespace

struct GpuDevices::Gpu {
  int ordinal = -1;
  std::unique_ptr<kernels::cuda::StreamOwner> stream;
  std::shared_ptr<LatePool> launcher;
};

struct GpuDevices::Impl {
  std::string path;
  std::vector<Gpu> gpus;  // per plan device; ordinal -1: not a GPU of this process
  std::vector<void*> device_memory;
  std::vector<void*> pinned;
  ~Impl() {
    for (Gpu& g : gpus)
      if (g.stream) cudaStreamSynchronize(g.stream->get().stream);
    for (void* p : pinned) cudaHostUnregister(p);
    for (void* p : device_memory) cudaFree(p);
  }
  Gpu& at(int32_t device) {
    OF_ASSERT(device >= 0 && size_t(device) < gpus.size() && gpus[size_t(device)].ordinal >= 0, "not a GPU of this process");
    return gpus[size_t(device)];
  }
};

GpuDevices::GpuDevices(const plan::Plan& p, int32_t rank, const std::string& plan_path) : impl_(std::make_unique<Impl>()) {
  impl_->path = plan_path;
  impl_->gpus.resize(p.devices.size());
  int wanted = 0;
  for (size_t d = 0; d < p.devices.size(); ++d)
    if (p.devices[d].kind != 0 && (rank < 0 || p.devices[d].rank == rank)) impl_->gpus[d].ordinal = wanted++;
  if (wanted == 0) return;
  const int have = kernels::cuda::device_count();
  if (have < wanted)
    fail({.file = plan_path}, "places tasks on {} GPU{} in this process; this machine has {} CUDA device{} (ofrun --emulate-gpus runs it on the CPU, for tests)",
         wanted, wanted == 1 ? "" : "s", have, have == 1 ? "" : "s");
  for (Gpu& g : impl_->gpus) {
    if (g.ordinal < 0) continue;
    g.stream = std::make_unique<kernels::cuda::StreamOwner>(g.ordinal);
    g.launcher = std::make_shared<LatePool>(1, false, true);  // in order: the stream's order
  }
  // Kernels that read another GPU's registers in place (collectives within a process) need peer
  // access to it; transfers copy without it. Only those pairs are asked for.
  std::set<std::pair<int, int>> reads;  // (reader, holder) ordinals
  for (const plan::Task& t : p.tasks) {
    if (!holds(t.device) || (t.kind != plan::TaskKind::compute && t.kind != plan::TaskKind::collective)) continue;
    for (plan::RegstId r : t.in_regsts) {
      const int32_t holder = p.arenas[size_t(p.regsts[size_t(r)].arena)].device;
      if (holds(holder) && holder != t.device) reads.emplace(impl_->gpus[size_t(t.device)].ordinal, impl_->gpus[size_t(holder)].ordinal);
    }
  }
  for (const auto& [reader, holder] : reads) {
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, reader, holder), {.file = plan_path}, "cudaDeviceCanAccessPeer");
    if (!can)
      fail({.file = plan_path}, "CUDA device {} cannot read device {}'s memory, which this plan's collectives within a process need", reader,
           holder);
    check(cudaSetDevice(reader), {.file = plan_path}, "cudaSetDevice");
    const cudaError_t e = cudaDeviceEnablePeerAccess(holder, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
    else check(e, {.file = plan_path}, "cudaDeviceEnablePeerAccess");
  }
}

GpuDevices::~GpuDevices() = default;

bool GpuDevices::holds(int32_t device) const {
  return device >= 0 && size_t(device) < impl_->gpus.size() && impl_->gpus[size_t(device)].ordinal >= 0;
}

uint8_t* GpuDevices::allocate(int32_t device, uint64_t bytes, uint8_t fill, const std::string& field) {
  Gpu& g = impl_->at(device);
  check(cudaSetDevice(g.ordinal), {.file = impl_->path, .field = field}, "cudaSetDevice");
  void* p = nullptr;
  const uint64_t size = std::max<uint64_t>(bytes, 256);
  if (cudaMalloc(&p, size) != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    fail({.file = impl_->path, .field = field}, "cannot allocate {} bytes on CUDA device {} ({} of {} bytes free)", size, g.ordinal, free_bytes, total);
  }
  impl_->device_memory.push_back(p);
  check(cudaMemset(p, fill, size), {.file = impl_->path, .field = field}, "cudaMemset");
  check(cudaDeviceSynchronize(), {.file = impl_->path, .field = field}, "cudaDeviceSynchronize");  // before any stream reads it
  return static_cast<uint8_t*>(p);
}

void GpuDevices::pin(uint8_t* host, uint64_t bytes) {
  if (bytes == 0) return;
  check(cudaHostRegister(host, bytes, cudaHostRegisterPortable), {.file = impl_->path}, "cudaHostRegister");
  impl_->pinned.push_back(host);
}

void GpuDevices::make_current(int32_t device) const { check(cudaSetDevice(impl_->at(device).ordinal), {.file = impl_->path}, "cudaSetDevice"); }

std::unique_ptr<protocol::Action> GpuDevices::kernel_action(int32_t device, std::unique_ptr<kernels::Kernel> kernel, kernels::RunCtx base) const {
  return std::make_unique<GpuKernelAction>(&impl_->at(device).stream->get(), std::move(kernel), base);
}

std::unique_ptr<protocol::Action> GpuDevices::copy_action(int32_t device, std::vector<uint64_t> blob_bytes) const {
  return std::make_unique<GpuCopyAction>(&impl_->at(device).stream->get(), std::move(blob_bytes));
}

const std::shared_ptr<LatePool>& GpuDevices::launcher(int32_t device) const { return impl_->at(device).launcher; }

namespace {

// Makes the GPU that holds `p` current, if a GPU does: copies and fills below go on its default
// stream. Our streams do not wait for that stream (they are non-blocking), so each call ends by
// waiting for it: a cudaMemcpy from pageable memory may return before the bytes have landed.
bool select_device_of(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (a.type != cudaMemoryTypeDevice) return false;
  check(cudaSetDevice(a.device), {}, "cudaSetDevice");
  return true;
}

}  // namespace

void gpu_copy(void* to, const void* from, uint64_t bytes) {
  if (bytes == 0) return;
  if (!select_device_of(to)) select_device_of(from);
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDefault), {}, "cudaMemcpy");
  check(cudaStreamSynchronize(nullptr), {}, "cudaStreamSynchronize");
}

void gpu_fill(void* at, uint8_t value, uint64_t bytes) {
  if (bytes == 0) return;
  select_device_of(at);
  check(cudaMemset(at, value, bytes), {}, "cudaMemset");
  check(cudaStreamSynchronize(nullptr), {}, "cudaStreamSynchronize");
}

}  // namespace of::runtime
