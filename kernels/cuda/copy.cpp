// SPDX-License-Identifier: Apache-2.0
// copy (any dtype), assign and accumulate on the GPU: the CPU twins' rules (kernels/cpu/copy.cpp,
// accumulate.cpp). accumulate counts its acts on the host, as the CPU twin does: acts of one
// task arrive in piece order, so the count says where a micro-batch falls in its step.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Copy final : public Kernel {
 public:
  Copy(const KernelConfig& cfg) : bytes_(copy_bytes(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (bytes_ == 0 || in[0] == out[0]) return;
    const cudaError_t e = cudaMemcpyAsync(out[0], in[0], bytes_, cudaMemcpyDeviceToDevice, ctx.stream->stream);
    if (e != cudaSuccess) ctx.stream->note_failure("copy: cudaMemcpyAsync", int(e));
  }

 private:
  size_t bytes_ = 0;
};

// assign: the state (out[0], in place over in[0]) becomes the value (in[1]).
class Assign final : public Kernel {
 public:
  Assign(const KernelConfig& cfg) : bytes_(assign_bytes(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (bytes_ == 0 || in[1] == out[0]) return;
    const cudaError_t e = cudaMemcpyAsync(out[0], in[1], bytes_, cudaMemcpyDeviceToDevice, ctx.stream->stream);
    if (e != cudaSuccess) ctx.stream->note_failure("assign: cudaMemcpyAsync", int(e));
  }

 private:
  size_t bytes_ = 0;
};

class Accumulate final : public Kernel {
 public:
  Accumulate(const KernelConfig& cfg) : k_(accumulate_micro_batches(cfg)), n_(numel(cfg.inputs[0].shape)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* g = static_cast<const float*>(in[0]);
    auto* acc = static_cast<float*>(out[0]);
    cudaError_t e = cudaSuccess;
    if (seen_ == 0)
      e = cudaMemcpyAsync(acc, g, size_t(n_) * sizeof(float), cudaMemcpyDeviceToDevice, s.stream);
    else
      launch_add_inplace(acc, g, n_, s.stream);
    if (++seen_ == k_) {
      seen_ = 0;
      launch_scale_inplace(acc, 1.0f / float(k_), n_, s.stream);
      for (int i = 1; i < 3 && e == cudaSuccess; ++i)
        e = cudaMemcpyAsync(out[i], in[i], sizeof(float), cudaMemcpyDeviceToDevice, s.stream);
    }
    if (e != cudaSuccess) s.note_failure("accumulate: cudaMemcpyAsync", int(e));
    s.check_launch("accumulate");
  }

 private:
  int64_t k_ = 1, n_ = 0, seen_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_copy(const KernelConfig& cfg) { return std::make_unique<Copy>(cfg); }
std::unique_ptr<Kernel> make_accumulate(const KernelConfig& cfg) { return std::make_unique<Accumulate>(cfg); }

std::unique_ptr<Kernel> make_assign(const KernelConfig& cfg) { return std::make_unique<Assign>(cfg); }

}  // namespace of::kernels::cuda
