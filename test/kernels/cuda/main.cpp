// SPDX-License-Identifier: Apache-2.0
// Catch2's main for the CUDA kernel tests: without a CUDA device every run reports itself
// skipped to ctest (exit 77, the suite's SKIP_RETURN_CODE), never passed; listing the tests
// (ctest's discovery, scripts/check_test_discovery.py) needs no device.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "kernels/cuda/device_stream.h"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    listing = listing || a.substr(0, 6) == "--list" || a == "-l" || a == "-t";
  }
  // OF_TWIN_CPU_ONLY=1: run the CPU halves alone (a machine without a GPU checks that every
  // case is a configuration the CPU kernel accepts; nothing is compared).
  const char* cpu_only = std::getenv("OF_TWIN_CPU_ONLY");
  if (!listing && !(cpu_only && std::string_view(cpu_only) == "1") && of::kernels::cuda::device_count() == 0) {
    std::puts("kernels_cuda_tests: no CUDA device here: skipped");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
