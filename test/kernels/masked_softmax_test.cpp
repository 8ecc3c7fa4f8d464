// SPDX-License-Identifier: Apache-2.0
// masked_softmax and its gradient against the two kernels they replace (where, then softmax; then
// softmax_grad, then where with 0): bit for bit, with the mask kept where true or where false,
// broadcast over leading dims, rows fully masked (NaN, as softmax of all -inf gives) and rows
// long enough for the kernel threads to split them.
#include <cmath>
#include <cstring>
#include <limits>

#include "grad_check.h"

namespace of::kernels {
namespace {

std::vector<uint8_t> bits(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void check_against_where_softmax(const Shape& x, const Shape& cond, bool masked, bool fully_masked_row) {
  INFO("x " << shape_str(x) << " cond " << shape_str(cond) << " masked " << masked);
  std::mt19937 rng(23);
  const auto xv = testing::random_floats(numel(x), rng, -4, 4);
  const auto dy = testing::random_floats(numel(x), rng, -1, 1);
  std::vector<uint8_t> c(size_t(numel(cond)));
  for (size_t i = 0; i < c.size(); ++i) c[i] = uint8_t(rng() % 3 == 0 ? 0 : 1 + rng() % 200);  // nonzero is true
  if (fully_masked_row)
    for (int64_t k = 0; k < x.back(); ++k) c[size_t(k)] = masked ? 1 : 0;
  const float inf = std::numeric_limits<float>::infinity();
  const float fill = -inf, zero = 0.0f;
  const TensorDesc xd{x, DType::f32}, cd{cond, DType::bool_}, sd{{}, DType::f32};
  Attrs axis;
  axis.set_int("axis", int64_t(x.size()) - 1);
  // The two kernels of the unfused graph: Where(cond, -inf, x) (or Where(cond, x, -inf)), Softmax.
  std::vector<float> where_out(xv.size()), want(xv.size()), got(xv.size(), std::nanf(""));
  testing::run_kernel("where", {}, {cd, masked ? sd : xd, masked ? xd : sd}, {xd}, {c.data(), masked ? static_cast<const void*>(&fill) : xv.data(), masked ? static_cast<const void*>(xv.data()) : &fill}, {where_out.data()});
  testing::run_kernel("softmax", axis, {xd}, {xd}, {where_out.data()}, {want.data()});
  Attrs m;
  m.set_int("masked", masked);
  testing::run_kernel("masked_softmax", m, {xd, cd}, {xd}, {xv.data(), c.data()}, {got.data()});
  CHECK(bits(got) == bits(want));
  if (fully_masked_row) CHECK(std::isnan(got[0]));
  // Their gradients: softmax_grad(dy, y), then Where's gradient where(cond, 0, g) (or (cond, g, 0)).
  std::vector<float> g(xv.size()), want_dx(xv.size()), got_dx(xv.size(), std::nanf(""));
  testing::run_kernel("softmax_grad", axis, {xd, xd}, {xd}, {dy.data(), want.data()}, {g.data()});
  testing::run_kernel("where", {}, {cd, masked ? sd : xd, masked ? xd : sd}, {xd}, {c.data(), masked ? static_cast<const void*>(&zero) : g.data(), masked ? static_cast<const void*>(g.data()) : &zero}, {want_dx.data()});
  testing::run_kernel("masked_softmax_grad", m, {xd, xd, cd}, {xd}, {dy.data(), want.data(), c.data()}, {got_dx.data()});
  CHECK(bits(got_dx) == bits(want_dx));
}

TEST_CASE("masked_softmax: where then softmax, and their gradients, bit for bit", "[kernels]") {
  for (bool masked : {true, false}) {
    check_against_where_softmax({2, 3, 8, 8}, {8, 8}, masked, false);         // a [T,T] mask over batch and heads
    check_against_where_softmax({2, 3, 8, 8}, {1, 1, 8, 8}, masked, false);   // the buffer's [1,1,T,T]
    check_against_where_softmax({4, 37}, {4, 37}, masked, false);             // no broadcast, odd rows
    check_against_where_softmax({3, 5, 2, 37}, {2, 37}, masked, true);        // a row all masked: NaN
    check_against_where_softmax({8, 4, 128, 128}, {128, 128}, masked, false); // the GPT's, split between kernel threads
  }
}

TEST_CASE("masked_softmax: a condition that is not the last dims of x, or of another dtype, is refused", "[kernels]") {
  const TensorDesc x{{2, 4, 4}, DType::f32};
  testing::check_rejects_descs("masked_softmax", {}, {x, {{4, 3}, DType::bool_}}, {x});
  testing::check_rejects_descs("masked_softmax", {}, {x, {{2, 1, 4}, DType::bool_}}, {x});
  testing::check_rejects_descs("masked_softmax", {}, {x, {{4, 4}, DType::f32}}, {x});
  testing::check_rejects_descs("masked_softmax_grad", {}, {x, {{2, 4, 3}, DType::f32}, {{4, 4}, DType::bool_}}, {x});
}

}  // namespace
}  // namespace of::kernels
