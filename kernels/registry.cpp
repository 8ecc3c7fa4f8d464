// SPDX-License-Identifier: Apache-2.0
// The one list of kernels this build has. Nothing registers itself: adding a kernel means adding
// a line here, in name order, so one screen shows everything that exists.
#include "kernels/registry.h"

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
      {"add", DeviceKind::cpu, DType::f32, &cpu::make_add},
      {"average_pool", DeviceKind::cpu, DType::f32, &cpu::make_average_pool},
      {"batch_norm", DeviceKind::cpu, DType::f32, &cpu::make_batch_norm},
      {"concat", DeviceKind::cpu, DType::f32, &cpu::make_concat},
      {"concat", DeviceKind::cpu, DType::i64, &cpu::make_concat},
      {"conv", DeviceKind::cpu, DType::f32, &cpu::make_conv},
      {"copy", DeviceKind::cpu, DType::f32, &cpu::make_copy},
      {"copy", DeviceKind::cpu, DType::i64, &cpu::make_copy},
      {"delay", DeviceKind::cpu, DType::f32, &cpu::make_delay},
      {"div", DeviceKind::cpu, DType::f32, &cpu::make_div},
      {"gemm", DeviceKind::cpu, DType::f32, &cpu::make_gemm},
      {"global_average_pool", DeviceKind::cpu, DType::f32, &cpu::make_global_average_pool},
      {"log_softmax", DeviceKind::cpu, DType::f32, &cpu::make_log_softmax},
      {"matmul", DeviceKind::cpu, DType::f32, &cpu::make_matmul},
      {"max_pool", DeviceKind::cpu, DType::f32, &cpu::make_max_pool},
      {"mul", DeviceKind::cpu, DType::f32, &cpu::make_mul},
      {"relu", DeviceKind::cpu, DType::f32, &cpu::make_relu},
      {"sigmoid", DeviceKind::cpu, DType::f32, &cpu::make_sigmoid},
      {"softmax", DeviceKind::cpu, DType::f32, &cpu::make_softmax},
      {"sub", DeviceKind::cpu, DType::f32, &cpu::make_sub},
      {"tanh", DeviceKind::cpu, DType::f32, &cpu::make_tanh},
      {"transpose", DeviceKind::cpu, DType::f32, &cpu::make_transpose},
      {"transpose", DeviceKind::cpu, DType::i64, &cpu::make_transpose},
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

void set_kernel_threads(int n) { omp_set_num_threads(n < 1 ? 1 : n); }

}  // namespace of::kernels
