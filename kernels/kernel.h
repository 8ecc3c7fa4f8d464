// SPDX-License-Identifier: Apache-2.0
// The kernel interface shared by compiler (what exists) and runtime (what to call).
// A kernel is prepared once, when a plan is loaded, from its attributes and tensor shapes;
// run() is then called once per act with pointers into the arena. run() must not allocate,
// lock or throw: prepare() has already checked everything the inputs could get wrong.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/attrs.h"
#include "common/shape.h"
#include "kernels/catalog.h"

namespace of::kernels {

// Which library multiplies matrices on the CPU. oneDNN is faster; OpenBLAS is what Debian's
// PyTorch calls, so with it sums are added in PyTorch's order and runs that amplify rounding
// (Adam on small gradients, ReLUs near zero) track PyTorch step for step.
enum class GemmBackend : int8_t { onednn = 0, openblas = 1 };

struct KernelConfig {
  const Attrs& attrs;
  std::vector<TensorDesc> inputs;   // in the op's input order (absent optional inputs omitted)
  std::vector<TensorDesc> outputs;
  std::string node;                 // for error messages only
  // Per input: its contents when they stay fixed for the whole run (a weight in an inference
  // plan), else nullptr. A kernel may repack such an input once here and ignore it in run().
  std::vector<const void*> constants = {};
  GemmBackend gemm = GemmBackend::onednn;
};

// The device stream a CUDA kernel enqueues on (kernels/cuda/device_stream.h): device, stream,
// that stream's cuBLAS handle and workspace. Opaque here, so this header includes no CUDA.
struct DeviceStream;

// What a kernel may need per act beyond its buffers.
struct RunCtx {
  // The piece's index in the whole training run (step * micro-batches + micro-batch; a resumed
  // run continues the count), and the run's seed: counter-based randomness (Dropout) is keyed by
  // them, so masks do not depend on threads, devices or where a run was resumed.
  int64_t piece = 0;
  uint64_t seed = 0;
  // CUDA kernels only (null on the CPU): run() enqueues its work on this stream and returns; the
  // act completes when the stream reaches it.
  DeviceStream* stream = nullptr;
  // CPU kernels only: where this act may keep workspace_bytes() of scratch, 64-byte aligned, or
  // null for the thread's own workspace (kernels/cpu/thread_workspace.h). The runtime sets it to
  // bytes of the task's share group that nothing uses while the task acts (plan::scratch_room).
  void* workspace = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // in[i] / out[i] point at buffers of the shapes given to prepare().
  virtual void run(const RunCtx& ctx, const void* const* in, void* const* out) = 0;
  // The scratch one act uses (reordered copies, column matrices) beyond its buffers: what
  // RunCtx::workspace must hold when it is set.
  virtual size_t workspace_bytes() const { return 0; }
};

// Throws of::Error (naming cfg.node) when the configuration is not supported.
using KernelFactory = std::unique_ptr<Kernel> (*)(const KernelConfig& cfg);

}  // namespace of::kernels
