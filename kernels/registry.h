// SPDX-License-Identifier: Apache-2.0
// The kernel registry: (kernel name, device kind, dtype) -> factory. The compiler asks whether a
// kernel exists; the runtime asks for the factory. A missing pair fails by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernel.h"

namespace of::kernels {

struct KernelEntry {
  std::string_view name;
  DeviceKind device;
  DType dtype;
  KernelFactory make;
};

// Every kernel this build has, sorted by name.
const std::vector<KernelEntry>& all_kernels();

// nullptr when there is no such kernel.
const KernelEntry* find_kernel(std::string_view name, DeviceKind device, DType dtype);

// Prepares a kernel or throws of::Error("no kernel 'x' for cpu:f32" / the factory's own error).
std::unique_ptr<Kernel> make_kernel(std::string_view name, DeviceKind device, DType dtype,
                                    const KernelConfig& cfg);

// Limits the threads a kernel on the calling thread may use (OpenMP inside oneDNN). The runtime
// calls it on each worker thread so that kernels never oversubscribe the cores.
void set_kernel_threads(int n);

}  // namespace of::kernels
