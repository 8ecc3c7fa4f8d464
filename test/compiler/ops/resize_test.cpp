// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cstring>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {
namespace {

In const_floats(const std::vector<float>& v) {
  In in = typed({int64_t(v.size())}, DType::f32);
  in.data.emplace(v.size() * 4);
  if (!v.empty()) std::memcpy(in.data->data(), v.data(), in.data->size());
  return in;
}

}  // namespace

TEST_CASE("resize: output floor(input x scale), the spatial scales and modes for the kernel", "[compiler]") {
  // nn.Upsample(scale_factor=2) as torch 1.13 exports it: an empty roi, scales [1,1,2,2].
  OneNode t(resize_def(), {f32({2, 3, 5, 7}), const_floats({}), const_floats({1, 1, 2, 2})},
            A().s("mode", "nearest").s("coordinate_transformation_mode", "asymmetric").s("nearest_mode", "floor"));
  CHECK(t.shape() == Shape{2, 3, 10, 14});
  CHECK(t.kernel() == "resize");
  CHECK(t.node().kernel_attrs.get_floats("scales") == std::vector<float>{2, 2});
  CHECK(t.node().kernel_attrs.get_str("coord") == "asymmetric");
  // Sizes instead (F.interpolate(size=...)): the scales are output over input.
  OneNode s(resize_def(), {f32({1, 2, 4}), const_floats({}), const_floats({}), const_i64({1, 2, 6})}, A().s("mode", "linear"));
  CHECK(s.shape() == Shape{1, 2, 6});
  CHECK(s.node().kernel_attrs.get_floats("scales") == std::vector<float>{1.5f});
  // Bicubic (F.interpolate(mode="bicubic")): torch's A = -0.75 reaches the kernel.
  OneNode b(resize_def(), {f32({1, 1, 2, 2}), const_floats({}), const_floats({1, 1, 2, 2})},
            A().s("mode", "cubic").f("cubic_coeff_a", -0.75f).s("coordinate_transformation_mode", "pytorch_half_pixel"));
  CHECK(b.shape() == Shape{1, 1, 4, 4});
  CHECK(b.node().kernel_attrs.get_str("mode") == "cubic");
  CHECK(b.node().kernel_attrs.get_float("cubic_coeff_a", 0) == -0.75f);
}

TEST_CASE("resize: refuses an unknown mode, antialias, exclude_outside, resizing channels and both or neither of scales and sizes", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(resize_def(), {f32({1, 1, 2, 2}), const_floats({}), const_floats({1, 1, 2, 2})}, A().s("mode", "lanczos")),
                      Catch::Contains("node 'Resize_0' (Resize)") && Catch::Contains("mode 'lanczos' is not supported"));
  REQUIRE_THROWS_WITH(OneNode(resize_def(), {f32({1, 1, 2, 2}), const_floats({}), const_floats({1, 1, 2, 2})},
                              A().s("mode", "cubic").i("exclude_outside", 1)),
                      Catch::Contains("exclude_outside is not supported"));
  REQUIRE_THROWS_WITH(OneNode(resize_def(), {f32({1, 1, 2, 2}), const_floats({}), const_floats({1, 1, 2, 2})}, A().i("antialias", 1)),
                      Catch::Contains("antialias is not supported"));
  REQUIRE_THROWS_WITH(OneNode(resize_def(), {f32({1, 1, 2, 2}), const_floats({}), const_floats({1, 2, 2, 2})}),
                      Catch::Contains("resizes the batch or channel axis"));
  REQUIRE_THROWS_WITH(OneNode(resize_def(), {f32({1, 1, 2, 2}), const_floats({}), const_floats({})}),
                      Catch::Contains("exactly one of scales (input 2) and sizes (input 3)"));
}

}  // namespace of::compiler::test
