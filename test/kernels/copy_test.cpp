// SPDX-License-Identifier: Apache-2.0
// copy: output bytes equal input bytes, for f32 and i64.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

TEST_CASE("copy: bytes are copied for f32 and i64, size mismatch throws", "[kernels]") {
  const auto f = testing::iota_data<float>(12);
  CHECK(testing::run_any<float>("copy", DType::f32, Attrs{}, {{3, 4}}, {f}, {2, 6}) == f);
  const auto i = testing::iota_data<int64_t>(12);
  CHECK(testing::run_any<int64_t>("copy", DType::i64, Attrs{}, {{12}}, {i}, {3, 2, 2}) == i);
  testing::check_rejects("copy", Attrs{}, {{3, 4}}, {{13}});
}

}  // namespace
}  // namespace of::kernels
