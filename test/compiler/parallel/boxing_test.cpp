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

namespace {

// Values of `desc` on each device of `p` as `sbp` lays them out (boxing's sources).
std::vector<ValueId> sources(Graph& g, const of::TensorDesc& logical, const Layout& from) {
  std::vector<ValueId> out;
  for (size_t j = 0; j < from.placement.size(); ++j) {
    const ValueId v = g.add_value("x@" + std::to_string(j));
    g.values[size_t(v)].desc = of::TensorDesc{local_region(logical.shape, from.placement, from.sbp, j).size, logical.dtype};
    g.values[size_t(v)].known = true;
    out.push_back(v);
  }
  return out;
}

struct Lowered {
  size_t nodes = 0, parts = 0;
  std::vector<std::string> ops;
};

Lowered lower_hops(const of::TensorDesc& logical, const Layout& from, const Layout& to, const std::vector<int32_t>* ranks) {
  Graph g;
  std::vector<ValueId> v = sources(g, logical, from);
  const std::vector<Layout> route = boxing_route(logical, from, to);
  for (size_t k = 0; k + 1 < route.size(); ++k)
    v = lower_boxing(g, plan_boxing(logical, route[k], route[k + 1]), logical, route[k], route[k + 1], v, "x/boxing", ranks);
  Lowered out;
  out.nodes = g.nodes.size();
  for (const Node& n : g.nodes)
    if (n.kernel == "collective_part") {
      ++out.parts;
      out.ops.push_back(n.op_type);
    }
  for (size_t j = 0; j < v.size(); ++j)
    CHECK(g.values[size_t(v[j])].desc.shape == local_region(logical.shape, to.placement, to.sbp, j).size);
  return out;
}

}  // namespace

TEST_CASE("boxing: between devices of one rank, each destination's part of a collective is one node", "[compiler]") {
  const of::TensorDesc grad{{64, 8}, of::DType::f32};
  const Placement four{{0, 1, 2, 3}, {4}};
  const std::vector<int32_t> one_rank{0, 0, 0, 0}, two_ranks{0, 0, 1, 1};
  // dp=4's gradient all-reduce: reduce-scatter then all-gather, four parts each.
  const Lowered all_reduce = lower_hops(grad, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}, &one_rank);
  CHECK(all_reduce.nodes == 8);
  CHECK(all_reduce.ops == std::vector<std::string>{"ReduceScatter", "ReduceScatter", "ReduceScatter", "ReduceScatter", "AllGather",
                                                   "AllGather", "AllGather", "AllGather"});
  // Point to point, the same conversion is slices, copies, concatenations and additions.
  const Lowered p2p = lower_hops(grad, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}, nullptr);
  CHECK(p2p.parts == 0);
  CHECK(p2p.nodes > 4 * all_reduce.nodes);
  // Across ranks, the other rank's pieces come point to point (sliced there, copied here: transfer
  // tasks), and each part sums or places them with its own rank's: per destination, two slices
  // and two copies before the reduce-scatter's part, two copies before the all-gather's.
  const Lowered ranked = lower_hops(grad, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}, &two_ranks);
  CHECK(ranked.parts == 8);
  CHECK(ranked.nodes == 4 * (2 + 2 + 1) + 4 * (2 + 1));
  // dp x tp over two ranks of two: a (B, P) activation summed inside each rank takes each
  // summand from the replica on its own rank, so all four parts are collective.
  const Placement mesh{{0, 1, 2, 3}, {2, 2}};
  const Lowered tp = lower_hops(grad, Layout{mesh, {Sbp::B(), Sbp::P()}}, Layout{mesh, {Sbp::B(), Sbp::B()}}, &two_ranks);
  CHECK(tp.parts == 4);
  CHECK(tp.nodes == 4);
  // A plain copy between stages stays a copy (a transfer task, as ranks need).
  const Layout stage0{Placement{{0}, {1}}, {Sbp::B()}}, stage1{Placement{{1}, {1}}, {Sbp::B()}};
  const Lowered copy = lower_hops(grad, stage0, stage1, &one_rank);
  CHECK(copy.parts == 0);
  CHECK(copy.nodes == 1);
  // B -> S is each device's own slice: nothing to gather.
  CHECK(lower_hops(grad, Layout{four, {Sbp::B()}}, Layout{four, {Sbp::S(0)}}, &one_rank).parts == 0);
}
