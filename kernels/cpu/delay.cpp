// SPDX-License-Identifier: Apache-2.0
// delay (tests only): copies input 0 to output 0, then sleeps `ms` milliseconds. It stands for
// compute time in streaming tests, so unlike every other kernel its run() blocks.
#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

class Delay final : public Kernel {
 public:
  Delay(const KernelConfig& cfg) {
    check_arity(cfg, "delay", 1, 1, 1);
    check_output_shape(cfg, "delay", 0, cfg.inputs[0].shape);
    if (cfg.inputs[0].dtype != cfg.outputs[0].dtype)
      fail(where_of(cfg), "delay: input and output dtypes differ");
    const float ms = cfg.attrs.get_float("ms", 0.0f);
    if (!(ms >= 0.0f && ms <= 3.6e6f)) fail(where_of(cfg), "delay: ms = {} must be in [0, 3600000]", ms);
    bytes_ = static_cast<size_t>(cfg.inputs[0].bytes());
    delay_ = std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0f));
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    if (bytes_ > 0 && in[0] != out[0]) std::memcpy(out[0], in[0], bytes_);
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
  }

 private:
  size_t bytes_ = 0;
  std::chrono::microseconds delay_{0};
};

}  // namespace

std::unique_ptr<Kernel> make_delay(const KernelConfig& cfg) { return std::make_unique<Delay>(cfg); }

}  // namespace of::kernels::cpu
