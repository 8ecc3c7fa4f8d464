// SPDX-License-Identifier: Apache-2.0
// cast (ONNX Cast at run time: a mask's bool to f32 for arithmetic, token ids' i64 to f32, a
// float to bool, a float to int64 ids: `(x * 10).long()`) and logical_not (~mask). cast takes
// bool, i64 or f32 to f32, bool or i64, each element as kernels/cast_value.h says. clip_int:
// torch.clamp of int64 ids.
#include <algorithm>
#include <cstdint>

#include "kernels/cast_value.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

template <class From, class To>
class Cast final : public Kernel {
 public:
  explicit Cast(int64_t n) : n_(n) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const From*>(in[0]);
    auto* y = static_cast<To*>(out[0]);
    for (int64_t i = 0; i < n_; ++i) y[i] = cast_value<From, To>(x[i]);
  }

 private:
  int64_t n_;
};

class ClipInt final : public Kernel {
 public:
  explicit ClipInt(const KernelConfig& cfg) : b_(clip_int_bounds(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const int64_t*>(in[0]);
    auto* y = static_cast<int64_t*>(out[0]);
    for (int64_t i = 0; i < b_.n; ++i) y[i] = std::min(std::max(x[i], b_.lo), b_.hi);
  }

 private:
  ClipIntBounds b_;
};

class LogicalNot final : public Kernel {
 public:
  explicit LogicalNot(const KernelConfig& cfg) : n_(logical_not_elements(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const uint8_t*>(in[0]);
    auto* y = static_cast<uint8_t*>(out[0]);
    for (int64_t i = 0; i < n_; ++i) y[i] = x[i] == 0;
  }

 private:
  int64_t n_;
};

template <class From>
std::unique_ptr<Kernel> cast_from(int64_t n, DType to) {
  switch (to) {
    case DType::f32: return std::make_unique<Cast<From, float>>(n);
    case DType::i64: return std::make_unique<Cast<From, int64_t>>(n);
    default: return std::make_unique<Cast<From, uint8_t>>(n);  // bool
  }
}

}  // namespace

std::unique_ptr<Kernel> make_cast(const KernelConfig& cfg) {
  const int64_t n = cast_elements(cfg);
  switch (cfg.inputs[0].dtype) {
    case DType::f32: return cast_from<float>(n, cfg.outputs[0].dtype);
    case DType::i64: return cast_from<int64_t>(n, cfg.outputs[0].dtype);
    default: return cast_from<uint8_t>(n, cfg.outputs[0].dtype);  // bool: 0 or 1
  }
}

std::unique_ptr<Kernel> make_clip_int(const KernelConfig& cfg) { return std::make_unique<ClipInt>(cfg); }

std::unique_ptr<Kernel> make_logical_not(const KernelConfig& cfg) { return std::make_unique<LogicalNot>(cfg); }

}  // namespace of::kernels::cpu
