// SPDX-License-Identifier: Apache-2.0
// The factories of the kernels kernels/kernel_list.def lists (the runtime's view of that list;
// catalog.cpp is the compiler's).
#include "kernels/registry.h"

#include <cblas.h>

#include <omp.h>

#include <utility>

#include "common/error.h"
#include "kernels/cpu/factories.h"
#ifdef OF_HAVE_CUDA
#include "kernels/cuda/factories.h"
#endif

namespace of::kernels {

namespace {

std::string_view device_name(DeviceKind d) { return d == DeviceKind::cpu ? "cpu" : "cuda"; }

#ifndef OF_HAVE_CUDA
// The factory of every CUDA kernel in a build without the CUDA toolkit: the kernel exists in of
// (a plan may name it), this build just cannot run it.
std::unique_ptr<Kernel> no_cuda(const KernelConfig& cfg) {
  Where where;
  where.node = cfg.node;
  fail(std::move(where), "this build of of has no CUDA (configure it where the CUDA toolkit is installed)");
}
#endif

}  // namespace

const std::vector<KernelEntry>& all_kernels() {
  static const std::vector<KernelEntry> entries = {
#define OF_FACTORY_cpu(name) &cpu::make_##name
#ifdef OF_HAVE_CUDA
#define OF_FACTORY_cuda(name) &cuda::make_##name
#else
#define OF_FACTORY_cuda(name) &no_cuda
#endif
#define OF_KERNEL(name, device, dtype) {#name, DeviceKind::device, DType::dtype, OF_FACTORY_##device(name)},
#include "kernels/kernel_list.def"
#undef OF_KERNEL
#undef OF_FACTORY_cuda
#undef OF_FACTORY_cpu
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
