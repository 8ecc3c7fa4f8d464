// SPDX-License-Identifier: Apache-2.0
// RandomUniform(Like), RandomNormal(Like): the shape (the input's, or the attribute), the kernel's
// attributes (each node its own stream), and refusals (their numbers: test/kernels/random_test.cpp,
// test/e2e/random_check.py).
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("random ops: the input's shape or the attribute's, uniform bounds or normal moments, a stream per node", "[compiler]") {
  OneNode like(random_normal_like_def(), {f32({4, 8})}, A().f("mean", 0.5f).f("scale", 2.0f));
  CHECK(like.shape() == Shape{4, 8});
  CHECK(like.kernel() == "random");
  CHECK(like.int_attr("normal") == 1);
  CHECK(like.float_attr("a") == 0.5f);
  CHECK(like.float_attr("b") == 2.0f);
  CHECK(like.node().runtime_inputs.empty());  // the input gives only the shape
  CHECK(like.int_attr("stream") == random_stream(like.node().name));
  OneNode uniform(random_uniform_def(), {}, A().is("shape", {3, 1}).f("low", -1.0f));
  CHECK(uniform.shape() == Shape{3, 1});
  CHECK(uniform.int_attr("normal") == 0);
  CHECK(uniform.float_attr("a") == -1.0f);
  CHECK(uniform.float_attr("b") == 1.0f);  // high's default
  CHECK(random_stream("a") != random_stream("b"));
}

TEST_CASE("random ops: a seed attribute, another dtype or no shape are refused, naming the node", "[compiler]") {
  REQUIRE_THROWS_WITH(OneNode(random_uniform_like_def(), {f32({4})}, A().f("seed", 1.0f)),
                      Catch::Contains("(RandomUniformLike)") && Catch::Contains("ofrun --seed"));
  REQUIRE_THROWS_WITH(OneNode(random_normal_like_def(), {f32({4})}, A().i("dtype", 11)), Catch::Contains("(RandomNormalLike)"));
  REQUIRE_THROWS_WITH(OneNode(random_normal_def(), {}), Catch::Contains("shape is required"));
}

}  // namespace of::compiler::test
