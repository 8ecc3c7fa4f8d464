// SPDX-License-Identifier: Apache-2.0
// GpuDevices in a build without the CUDA toolkit: a plan that places tasks on GPUs is refused in
// one line when it loads; nothing else here is ever reached.
#include "common/error.h"
#include "runtime/actors/late_action.h"
#include "runtime/gpu/gpu_devices.h"

namespace of::runtime {

struct GpuDevices::Impl {};

GpuDevices::GpuDevices(const plan::Plan& p, int32_t rank, const std::string& plan_path) {
  for (const plan::DeviceRef& d : p.devices)
    if (d.kind != 0 && (rank < 0 || d.rank == rank))
      fail({.file = plan_path}, "places tasks on GPUs; this ofrun was built without CUDA (ofrun --emulate-gpus runs it on the CPU, for tests)");
}

GpuDevices::~GpuDevices() = default;

bool GpuDevices::holds(int32_t) const { return false; }

uint8_t* GpuDevices::allocate(int32_t, uint64_t, uint8_t, const std::string&) { internal_error(__FILE__, __LINE__, "no GPUs in this build"); }

void GpuDevices::pin(uint8_t*, uint64_t) {}

void GpuDevices::make_current(int32_t) const { internal_error(__FILE__, __LINE__, "no GPUs in this build"); }

std::unique_ptr<protocol::Action> GpuDevices::kernel_action(int32_t, std::unique_ptr<kernels::Kernel>, kernels::RunCtx) const {
  internal_error(__FILE__, __LINE__, "no GPUs in this build");
}

std::unique_ptr<protocol::Action> GpuDevices::copy_action(int32_t, std::vector<uint64_t>) const {
  internal_error(__FILE__, __LINE__, "no GPUs in this build");
}

const std::shared_ptr<LatePool>& GpuDevices::launcher(int32_t) const { internal_error(__FILE__, __LINE__, "no GPUs in this build"); }

void gpu_copy(void*, const void*, uint64_t) { internal_error(__FILE__, __LINE__, "no GPUs in this build"); }
void gpu_fill(void*, uint8_t, uint64_t) { internal_error(__FILE__, __LINE__, "no GPUs in this build"); }

}  // namespace of::runtime
