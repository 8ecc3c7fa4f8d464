// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("einsum: output shapes of explicit, implicit and ellipsis equations", "[compiler]") {
  auto shape = [](const std::string& eq, std::vector<In> in) { return OneNode(einsum_def(), std::move(in), A().s("equation", eq)).shape(); };
  CHECK(shape("bhqd,bhkd->bhqk", {f32({2, 3, 4, 8}), f32({2, 3, 5, 8})}) == Shape{2, 3, 4, 5});
  CHECK(shape("ij,jk", {f32({2, 3}), f32({3, 4})}) == Shape{2, 4});       // implicit: letters once, sorted
  CHECK(shape("...ij,jk->...ik", {f32({5, 6, 2, 3}), f32({3, 4})}) == Shape{5, 6, 2, 4});
  CHECK(shape("...i,...i", {f32({5, 3}), f32({5, 3})}) == Shape{5});    // implicit keeps the ellipsis
  CHECK(shape("b i, b j -> b i j", {f32({2, 3}), f32({2, 4})}) == Shape{2, 3, 4});
  CHECK(shape("bij->bji", {f32({2, 3, 4})}) == Shape{2, 4, 3});
  CHECK(shape("bij->b", {f32({2, 3, 4})}) == Shape{2});
}

TEST_CASE("einsum: diagonals, three operands, broadcasting and bad terms are refused by node", "[compiler]") {
  auto refuse = [](const std::string& eq, std::vector<In> in, const std::string& why) {
    INFO(eq);
    REQUIRE_THROWS_WITH(OneNode(einsum_def(), std::move(in), A().s("equation", eq)), Catch::Contains("(Einsum)") && Catch::Contains(why));
  };
  refuse("ii->i", {f32({3, 3})}, "repeats a letter (a diagonal or trace)");
  refuse("ij,jk,kl->il", {f32({2, 3}), f32({3, 4}), f32({4, 5})}, "Einsum of 3 operands");
  refuse("ij,jk->ik", {f32({2, 3}), f32({4, 5})}, "'j' is 3 in one operand and 4 in another");
  refuse("ij,jk->ik", {f32({2, 3, 1}), f32({3, 4})}, "operand 0 has rank 3");
  refuse("ij,jk->iz", {f32({2, 3}), f32({3, 4})}, "output letter 'z' is in no operand");
  refuse("i1,jk->ik", {f32({2, 3}), f32({3, 4})}, "'1' is not a letter");
}

}  // namespace of::compiler::test
