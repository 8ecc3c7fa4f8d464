// SPDX-License-Identifier: Apache-2.0
// delay: copies its input, then blocks for the requested time.
#include <chrono>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

TEST_CASE("delay: copies its input and blocks for ms milliseconds", "[kernels]") {
  const auto x = testing::iota_data<float>(6);
  Attrs attrs;
  attrs.set_float("ms", 20.0f);
  const auto start = std::chrono::steady_clock::now();
  CHECK(testing::run_f32("delay", attrs, {{2, 3}}, {x}, {2, 3}) == x);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(20));
  testing::check_rejects("delay", attrs, {{2, 3}}, {{3, 2}});
}

}  // namespace
}  // namespace of::kernels
