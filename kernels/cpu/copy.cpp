// SPDX-License-Identifier: Apache-2.0
// copy: output = input bytes, for any dtype. Reshape, Flatten and Identity lower to it.
// assign: (target, value) -> target' = value, in place on a persistent tensor: ZeRO 1/2 write the
// gathered weights of a step into each device's replica with it.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class Copy final : public Kernel {
 public:
  Copy(const KernelConfig& cfg) : bytes_(copy_bytes(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    if (bytes_ > 0 && in[0] != out[0]) std::memcpy(out[0], in[0], bytes_);
  }

 private:
  size_t bytes_ = 0;
};

class Assign final : public Kernel {
 public:
  Assign(const KernelConfig& cfg) : bytes_(assign_bytes(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    if (bytes_ > 0 && in[1] != out[0]) std::memcpy(out[0], in[1], bytes_);
  }

 private:
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_assign(const KernelConfig& cfg) { return std::make_unique<Assign>(cfg); }
std::unique_ptr<Kernel> make_copy(const KernelConfig& cfg) { return std::make_unique<Copy>(cfg); }

}  // namespace of::kernels::cpu
