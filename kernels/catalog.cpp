// SPDX-License-Identifier: Apache-2.0
#include "kernels/catalog.h"

namespace of::kernels {

const std::vector<KernelSpec>& kernel_catalog() {
  static const std::vector<KernelSpec> specs = {
#define OF_KERNEL(name, device, dtype) {#name, DeviceKind::device, DType::dtype},
#include "kernels/kernel_list.def"
#undef OF_KERNEL
  };
  return specs;
}

bool kernel_exists(std::string_view name, DeviceKind device, DType dtype) {
  for (const KernelSpec& k : kernel_catalog())
    if (k.name == name && k.device == device && k.dtype == dtype) return true;
  return false;
}

}  // namespace of::kernels
