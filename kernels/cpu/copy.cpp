// SPDX-License-Identifier: Apache-2.0
// copy: output = input bytes, for any dtype. Reshape, Flatten and Identity lower to it.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

class Copy final : public Kernel {
 public:
  Copy(const KernelConfig& cfg) {
    check_arity(cfg, "copy", 1, 1, 1);
    const TensorDesc& x = cfg.inputs[0];
    const TensorDesc& y = cfg.outputs[0];
    if (x.dtype != y.dtype || numel(x.shape) != numel(y.shape))
      fail(where_of(cfg), "copy: input {} {} and output {} {} differ in dtype or size",
           dtype_name(x.dtype), shape_str(x.shape), dtype_name(y.dtype), shape_str(y.shape));
    bytes_ = static_cast<size_t>(x.bytes());
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    if (bytes_ > 0 && in[0] != out[0]) std::memcpy(out[0], in[0], bytes_);
  }

 private:
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_copy(const KernelConfig& cfg) { return std::make_unique<Copy>(cfg); }

}  // namespace of::kernels::cpu
