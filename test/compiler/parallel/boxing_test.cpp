// SPDX-License-Identifier: Apache-2.0
// Boxing routes: every conversion the SBP choice may ask for can be lowered, hop by hop.
#include <catch2/catch.hpp>

#include "compiler/parallel/boxing.h"

using namespace of::compiler;

TEST_CASE("boxing: a (P, P) gradient becomes the (B, S(0)) of its weight by summing it whole first", "[compiler]") {
  // dp 4 x tp 2: the weight is split over tensor parallelism, its gradient partial at both levels
  // (issue 13's bug: ofc stopped with "no signature fits node update/...").
  const Placement mesh{{0, 1, 2, 3, 4, 5, 6, 7}, {4, 2}};
  const of::TensorDesc weight{{64, 64}, of::DType::f32};
  const Layout grad{mesh, {Sbp::P(), Sbp::P()}}, home{mesh, {Sbp::B(), Sbp::S(0)}};
  const std::vector<Layout> route = boxing_route(weight, grad, home);
  REQUIRE(route.size() >= 2);
  CHECK(route.front() == grad);
  CHECK(route.back() == home);
  for (size_t k = 0; k + 1 < route.size(); ++k) CHECK(plan_boxing(weight, route[k], route[k + 1]).possible);
  CHECK(route_cost(weight, grad, home).possible);
  // What already went directly still does: (P, P) to (B, B) on two levels of two.
  const Placement square{{0, 1, 2, 3}, {2, 2}};
  const std::vector<Layout> direct = boxing_route(weight, Layout{square, {Sbp::P(), Sbp::P()}}, Layout{square, {Sbp::B(), Sbp::B()}});
  CHECK(direct.size() == 2);
}
