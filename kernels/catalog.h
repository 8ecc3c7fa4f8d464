// SPDX-License-Identifier: Apache-2.0
// The kernel catalog: which (kernel, device kind, dtype) this build has, without their factories,
// so that the compiler can check a lowered op against it while linking none of the kernel
// libraries (oneDNN, OpenBLAS). The runtime's registry (registry.h) lists the same entries, read
// from the same file (kernel_list.def), with a factory each.
#pragma once

#include <string_view>
#include <vector>

#include "common/shape.h"

namespace of::kernels {

enum class DeviceKind : int8_t { cpu = 0, cuda = 1 };

struct KernelSpec {
  std::string_view name;
  DeviceKind device;
  DType dtype;
};

// Every kernel this build has, sorted by name, then dtype.
const std::vector<KernelSpec>& kernel_catalog();

bool kernel_exists(std::string_view name, DeviceKind device, DType dtype);

}  // namespace of::kernels
