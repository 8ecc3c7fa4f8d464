// SPDX-License-Identifier: Apache-2.0
// gather_elements and scatter_elements (kernels/elements_space.h): torch.gather along an axis and
// Tensor.scatter_ / scatter_add_, with run-time indices; each the other's gradient.
#include <cstring>

#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

class GatherElements final : public Kernel {
 public:
  explicit GatherElements(const KernelConfig& cfg) : s_(gather_elements_space(cfg)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    auto* y = static_cast<float*>(out[0]);
    for (int64_t e = 0; e < s_.count; ++e) {
      const int64_t off = s_.data_offset(in[1], e);
      y[e] = off < 0 ? 0.0f : x[off];
    }
  }

 private:
  ElementsSpace s_;
};

class ScatterElements final : public Kernel {
 public:
  explicit ScatterElements(const KernelConfig& cfg) : s_(scatter_elements_space(cfg, mode_)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    auto* y = static_cast<float*>(out[0]);
    const size_t bytes = size_t(s_.data_count) * sizeof(float);
    const auto [base, indices, updates] = scatter_inputs(mode_, in);
    if (!base) std::memset(y, 0, bytes);
    else if (y != base) std::memcpy(y, base, bytes);
    // In I's order: the last update of a repeated position wins (set), additions in that order.
    for (int64_t e = 0; e < s_.count; ++e) {
      const int64_t off = s_.data_offset(indices, e);
      if (off >= 0) scatter_one(mode_, y, off, updates, e);
    }
  }

 private:
  ScatterMode mode_ = ScatterMode::set;
  ElementsSpace s_;
};

}  // namespace

std::unique_ptr<Kernel> make_gather_elements(const KernelConfig& cfg) { return std::make_unique<GatherElements>(cfg); }
std::unique_ptr<Kernel> make_scatter_elements(const KernelConfig& cfg) { return std::make_unique<ScatterElements>(cfg); }

}  // namespace of::kernels::cpu
