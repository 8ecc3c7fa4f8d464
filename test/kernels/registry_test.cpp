// SPDX-License-Identifier: Apache-2.0
// Tests for kernels/registry.cpp: the list is sorted and unique, lookups fail by name.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

TEST_CASE("registry: all_kernels is sorted by name, device and dtype, without duplicates", "[kernels]") {
  const auto& all = all_kernels();
  REQUIRE(!all.empty());
  for (size_t i = 1; i < all.size(); ++i) {
    const auto& a = all[i - 1];
    const auto& b = all[i];
    INFO(a.name << " then " << b.name);
    CHECK((a.name < b.name || (a.name == b.name && (a.device < b.device || (a.device == b.device && a.dtype < b.dtype)))));
  }
  for (const char* name :
       {"add",         "average_pool", "batch_norm", "concat", "conv",
        "copy",        "delay",        "div",        "gemm",   "global_average_pool",
        "log_softmax", "matmul",       "max_pool",   "mul",    "relu",
        "sigmoid",     "softmax",      "sub",        "tanh",   "transpose"}) {
    INFO(name);
    CHECK(find_kernel(name, DeviceKind::cpu, DType::f32) != nullptr);
  }
  CHECK(find_kernel("transpose", DeviceKind::cpu, DType::i64) != nullptr);
  CHECK(find_kernel("relu", DeviceKind::cpu, DType::i64) == nullptr);
  CHECK(find_kernel("relu", DeviceKind::cuda, DType::f32) != nullptr);  // a CUDA twin
  CHECK(find_kernel("delay", DeviceKind::cuda, DType::f32) == nullptr);  // a test op, CPU only
}

TEST_CASE("registry: a missing kernel fails by name, device and dtype", "[kernels]") {
  Attrs attrs;
  KernelConfig cfg{attrs, {}, {}, "n1"};
  CHECK_THROWS_WITH(make_kernel("nope", DeviceKind::cpu, DType::f32, cfg),
                    "node 'n1': no kernel 'nope' for cpu:f32");
  CHECK_THROWS_WITH(make_kernel("relu", DeviceKind::cuda, DType::bf16, cfg),
                    "node 'n1': no kernel 'relu' for cuda:bf16");
  CHECK_THROWS_AS(make_kernel("relu", DeviceKind::cpu, DType::f32, cfg), Error);  // 0 inputs
#ifndef OF_HAVE_CUDA
  CHECK_THROWS_WITH(make_kernel("relu", DeviceKind::cuda, DType::f32, cfg),
                    "node 'n1': this build of of has no CUDA (configure it where the CUDA toolkit is installed)");
#endif
}

TEST_CASE("registry: set_kernel_threads limits the calling thread and kernels still run",
          "[kernels]") {
  set_kernel_threads(1);
  std::mt19937 rng(1);
  const auto a = testing::random_floats(64 * 32, rng), b = testing::random_floats(32 * 16, rng);
  const auto y = testing::run_f32("matmul", Attrs{}, {{64, 32}, {32, 16}}, {a, b}, {64, 16});
  double ref = 0;
  for (int k = 0; k < 32; ++k) ref += double(a[k]) * b[k * 16];
  CHECK(std::fabs(y[0] - ref) < 1e-4);
  set_kernel_threads(2);
}

}  // namespace
}  // namespace of::kernels

namespace of::kernels {
namespace {

TEST_CASE("catalog: the compiler's catalog and the runtime's registry list the same kernels", "[kernels]") {
  const auto& catalog = kernel_catalog();
  const auto& registry = all_kernels();
  REQUIRE(catalog.size() == registry.size());
  for (size_t i = 0; i < catalog.size(); ++i) {
    INFO(catalog[i].name);
    CHECK(catalog[i].name == registry[i].name);
    CHECK(catalog[i].device == registry[i].device);
    CHECK(catalog[i].dtype == registry[i].dtype);
    CHECK(kernel_exists(catalog[i].name, catalog[i].device, catalog[i].dtype));
  }
  CHECK_FALSE(kernel_exists("relu", DeviceKind::cpu, DType::i64));
  CHECK_FALSE(kernel_exists("nope", DeviceKind::cpu, DType::f32));
}

}  // namespace
}  // namespace of::kernels
