// SPDX-License-Identifier: Apache-2.0
// concat, split and slice on the GPU, any dtype: the CPU twins' geometry (kernels/rules.h), each input's
// (or output's) blocks moved by one strided device-to-device copy over the outer rows
// (cudaMemcpy2DAsync), concat's zero tail by cudaMemset2DAsync: no kernel of our own.
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

class Concat final : public Kernel {
 public:
  Concat(const KernelConfig& cfg) : g_(concat_geometry(cfg)) {
    for (size_t n : g_.block_bytes) row_ += n;
    row_ += g_.tail_bytes;
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    auto* y = static_cast<char*>(out[0]);
    cudaError_t e = cudaSuccess;
    for (size_t k = 0; k < g_.block_bytes.size() && e == cudaSuccess; y += g_.block_bytes[k], ++k) {
      const size_t n = g_.block_bytes[k];
      if (n == 0 || g_.outer == 0) continue;
      // One row: a plain copy (a 2-D copy refuses pitches past the device's limit, about 2 GiB).
      e = g_.outer == 1 ? cudaMemcpyAsync(y, in[k], n, cudaMemcpyDeviceToDevice, ctx.stream->stream)
                        : cudaMemcpy2DAsync(y, row_, in[k], n, n, size_t(g_.outer), cudaMemcpyDeviceToDevice,
                                            ctx.stream->stream);
    }
    if (e == cudaSuccess && g_.tail_bytes > 0 && g_.outer > 0)
      e = g_.outer == 1 ? cudaMemsetAsync(y, 0, g_.tail_bytes, ctx.stream->stream)
                        : cudaMemset2DAsync(y, row_, 0, g_.tail_bytes, size_t(g_.outer), ctx.stream->stream);
    if (e != cudaSuccess) ctx.stream->note_failure("concat: device copy", int(e));
  }

 private:
  ConcatGeometry g_;
  size_t row_ = 0;  // bytes of one outer row of Y
};

class Split final : public Kernel {
 public:
  Split(const KernelConfig& cfg) : g_(split_geometry(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const char*>(in[0]);
    cudaError_t e = cudaSuccess;
    for (size_t k = 0; k < g_.row.size() && e == cudaSuccess; ++k) {
      const size_t n = g_.row[k];
      if (n == 0 || g_.outer == 0) continue;  // an empty part may have no buffer
      e = g_.outer == 1 ? cudaMemcpyAsync(out[k], x + g_.offset[k], n, cudaMemcpyDeviceToDevice, ctx.stream->stream)
                        : cudaMemcpy2DAsync(out[k], n, x + g_.offset[k], g_.in_row, n, size_t(g_.outer),
                                            cudaMemcpyDeviceToDevice, ctx.stream->stream);
    }
    if (e != cudaSuccess) ctx.stream->note_failure("split: device copy", int(e));
  }

 private:
  SplitGeometry g_;
};

class Slice final : public Kernel {
 public:
  Slice(const KernelConfig& cfg) : g_(slice_geometry(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (g_.out_row == 0 || g_.outer == 0) return;
    const auto* x = static_cast<const char*>(in[0]) + g_.offset;
    const cudaError_t e = g_.outer == 1 ? cudaMemcpyAsync(out[0], x, g_.out_row, cudaMemcpyDeviceToDevice, ctx.stream->stream)
                                        : cudaMemcpy2DAsync(out[0], g_.out_row, x, g_.in_row, g_.out_row, size_t(g_.outer),
                                                            cudaMemcpyDeviceToDevice, ctx.stream->stream);
    if (e != cudaSuccess) ctx.stream->note_failure("slice: device copy", int(e));
  }

 private:
  SliceGeometry g_;
};

}  // namespace

std::unique_ptr<Kernel> make_concat(const KernelConfig& cfg) { return std::make_unique<Concat>(cfg); }
std::unique_ptr<Kernel> make_split(const KernelConfig& cfg) { return std::make_unique<Split>(cfg); }
std::unique_ptr<Kernel> make_slice(const KernelConfig& cfg) { return std::make_unique<Slice>(cfg); }

}  // namespace of::kernels::cuda
