// SPDX-License-Identifier: Apache-2.0
// The factories of the kernels kernels/kernel_list.def lists (the runtime's view of that list;
// catalog.cpp is the compiler's).
#include "kernels/registry.h"

#include <cblas.h>

#include <omp.h>

#include <utility>

#include "common/error.h"
#include "kernels/cpu/factories.h"

namespace of::kernels {

namespace {

std::string_view device_name(DeviceKind d) { return d == DeviceKind::cpu ? "cpu" : "cuda"; }

}  // namespace

const std::vector<KernelEntry>& all_kernels() {
  static const std::vector<KernelEntry> entries = {
#define OF_KERNEL(name, device, dtype) {#name, DeviceKind::device, DType::dtype, &device::make_##name},
#include "kernels/kernel_list.def"
#undef OF_KERNEL
  };
  return entries;
}

const KernelEntry* find_kernel(std::string_view name, DeviceKind device, DType dtype) {
  for (const KernelEntry& e : all_kernels())
    if (e.name == name && e.device == device && e.dtype == dtype) return &e;
  return nullptr;
}

std::unique_ptr<Kernel> make_kernel(std::string_view name, DeviceKind device, DType dtype,
                                    const KernelConfig& cfg) {
  const KernelEntry* e = find_kernel(name, device, dtype);
  if (!e) {
    Where where;  // not Where{.node = ..}: -Wextra flags the omitted fields
    where.node = cfg.node;
    fail(std::move(where), "no kernel '{}' for {}:{}", name, device_name(device),
         dtype_name(dtype));
  }
  return e->make(cfg);
}

void set_kernel_threads(int n) {
  omp_set_num_threads(n < 1 ? 1 : n);
  openblas_set_num_threads(n < 1 ? 1 : n);  // process-wide in OpenBLAS; every worker sets the same
}

}  // namespace of::kernels
