// SPDX-License-Identifier: Apache-2.0
// copy (any dtype) and accumulate on the GPU: the CPU twins' rules (kernels/cpu/copy.cpp,
// accumulate.cpp). accumulate counts its acts on the host, as the CPU twin does: acts of one
// task arrive in piece order, so the count says where a micro-batch falls in its step.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

using cpu::where_of;

class Copy final : public Kernel {
 public:
  Copy(const KernelConfig& cfg) {
    cpu::check_arity(cfg, "copy", 1, 1, 1);
    const TensorDesc& x = cfg.inputs[0];
    const TensorDesc& y = cfg.outputs[0];
    if (x.dtype != y.dtype || numel(x.shape) != numel(y.shape))
      fail(where_of(cfg), "copy: input {} {} and output {} {} differ in dtype or size", dtype_name(x.dtype),
           shape_str(x.shape), dtype_name(y.dtype), shape_str(y.shape));
    bytes_ = static_cast<size_t>(x.bytes());
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (bytes_ == 0 || in[0] == out[0]) return;
    const cudaError_t e = cudaMemcpyAsync(out[0], in[0], bytes_, cudaMemcpyDeviceToDevice, ctx.stream->stream);
    if (e != cudaSuccess) ctx.stream->note_failure("copy: cudaMemcpyAsync", int(e));
  }

 private:
  size_t bytes_ = 0;
};

class Accumulate final : public Kernel {
 public:
  Accumulate(const KernelConfig& cfg) {
    const char* name = "accumulate";
    cpu::check_arity(cfg, name, 3, 3, 3);
    cpu::check_dtypes(cfg, name, DType::f32);
    k_ = cfg.attrs.get_int("micro_batches", 0);
    if (k_ < 1 || k_ > (1 << 20)) fail(where_of(cfg), "{}: micro_batches {} is outside [1, 2^20]", name, k_);
    cpu::check_output_shape(cfg, name, 0, cfg.inputs[0].shape);
    for (int i = 1; i < 3; ++i) {
      if (numel(cfg.inputs[size_t(i)].shape) != 1) fail(where_of(cfg), "{}: input {} must be a scalar", name, i);
      cpu::check_output_shape(cfg, name, i, cfg.inputs[size_t(i)].shape);
    }
    n_ = numel(cfg.inputs[0].shape);
  }
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

}  // namespace of::kernels::cuda
