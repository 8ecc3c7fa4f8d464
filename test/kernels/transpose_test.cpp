// SPDX-License-Identifier: Apache-2.0
// transpose: exact element movement for f32 and i64, against an index-mapping reference.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

template <class T>
void check_transpose(DType dtype, const Shape& x, std::vector<int64_t> perm) {
  const auto xv = testing::iota_data<T>(numel(x));
  Attrs attrs;
  if (!perm.empty())
    attrs.set_ints("perm", perm);
  else
    for (size_t i = x.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  Shape y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[perm[i]];
  const auto xs = testing::strides_of(x);
  std::vector<T> ref(xv.size());
  for (int64_t i = 0; i < numel(y); ++i) {
    const auto idx = testing::unravel(i, y);
    int64_t src = 0;
    for (size_t k = 0; k < y.size(); ++k) src += idx[k] * xs[perm[k]];
    ref[i] = xv[src];
  }
  INFO(shape_str(x) << " perm " << shape_str(perm));
  CHECK(testing::run_any<T>("transpose", dtype, attrs, {x}, {xv}, y) == ref);
}

TEST_CASE("transpose: ranks 1 to 6 with f32 and i64 elements match index reference", "[kernels]") {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{5}, {0}},
      {{3, 4}, {1, 0}},
      {{3, 4}, {}},  // default: reversed axes
      {{2, 3, 4, 5}, {0, 2, 3, 1}},
      {{2, 3, 4, 5}, {0, 3, 1, 2}},
      {{2, 1, 4, 1}, {3, 2, 0, 1}},
      {{2, 3, 4}, {0, 1, 2}},
      {{2, 3, 1, 4, 2, 3}, {5, 0, 4, 2, 1, 3}},
      {{2, 0, 3}, {2, 1, 0}},
      // matrix transposes, copied in 32x32 tiles: partial tiles at both edges, a batch of
      // matrices, an outer axis that stays, and a swap of merged axes
      {{70, 45}, {1, 0}},
      {{3, 40, 33}, {0, 2, 1}},
      {{2, 5, 37, 64}, {0, 1, 3, 2}},
      {{2, 3, 4, 50}, {3, 0, 1, 2}}};
  for (const auto& [x, perm] : cases) {
    check_transpose<float>(DType::f32, x, perm);
    check_transpose<int64_t>(DType::i64, x, perm);
  }
}

TEST_CASE("transpose: bad perm throws of::Error", "[kernels]") {
  Attrs dup;
  dup.set_ints("perm", {0, 0});
  testing::check_rejects("transpose", dup, {{2, 3}}, {{2, 3}});
  Attrs short_perm;
  short_perm.set_ints("perm", {1, 0});
  testing::check_rejects("transpose", short_perm, {{2, 3, 4}}, {{3, 2, 4}});
  testing::check_rejects("transpose", Attrs{}, {{2, 3}}, {{2, 3}});  // wrong output shape
}

}  // namespace
}  // namespace of::kernels
