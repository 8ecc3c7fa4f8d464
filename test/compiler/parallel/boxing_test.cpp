// SPDX-License-Identifier: Apache-2.0
// Boxing routes: every conversion the SBP choice may ask for can be lowered, hop by hop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

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
  size_t nodes = 0, parts = 0, copies = 0;
  std::vector<std::string> ops;
  std::vector<std::set<ValueId>> reads;  // per destination, the sources its value is made from
};

// Lowers every hop of the route from `from` to `to`, as parallelize does; `route_ranks` also
// gives the ranks to the route (parallelize always does; without them, the route is flat).
Lowered lower_hops(const of::TensorDesc& logical, const Layout& from, const Layout& to, const std::vector<int32_t>* ranks,
                   const std::vector<int32_t>* route_ranks = nullptr) {
  Graph g;
  std::vector<ValueId> v = sources(g, logical, from);
  const std::vector<ValueId> src = v;
  const std::vector<Layout> route = boxing_route(logical, from, to, route_ranks);
  for (size_t k = 0; k + 1 < route.size(); ++k)
    v = lower_boxing(g, plan_hop(logical, route, k), logical, route[k], route[k + 1], v, "x/boxing", ranks);
  Lowered out;
  out.nodes = g.nodes.size();
  for (const Node& n : g.nodes) {
    if (n.kernel == "collective_part") {
      ++out.parts;
      out.ops.push_back(n.op_type);
    }
    if (n.op_type == "Copy") ++out.copies;
  }
  for (ValueId d : v) {
    std::set<ValueId> reached;
    std::vector<ValueId> pending{d};  // values still to walk back from
    while (!pending.empty()) {
      const ValueId x = pending.back();
      pending.pop_back();
      if (std::find(src.begin(), src.end(), x) != src.end()) reached.insert(x);
      const NodeId p = g.values[size_t(x)].producer;
      if (p >= 0)
        for (ValueId in : g.nodes[size_t(p)].inputs) pending.push_back(in);
    }
    out.reads.push_back(std::move(reached));
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

TEST_CASE("boxing: an all-reduce over ranks of several devices sums within each rank first, then across", "[compiler]") {
  const of::TensorDesc grad{{64, 8}, of::DType::f32};
  const Placement eight{{0, 1, 2, 3, 4, 5, 6, 7}, {8}};
  const Layout partial{eight, {Sbp::P()}}, whole{eight, {Sbp::B()}};
  const std::vector<int32_t> two_ranks{0, 0, 0, 0, 1, 1, 1, 1};
  // The level seen as [2 ranks, 4 devices]: reduce-scatter in each rank, reduce-scatter and
  // all-gather across ranks, all-gather in each rank; the first and last hops only relabel.
  const std::vector<Layout> route = boxing_route(grad, partial, whole, &two_ranks);
  REQUIRE(route.size() == 7);
  CHECK(route[1].placement.hierarchy == std::vector<int64_t>{2, 4});
  CHECK(route[2].sbp == NdSbp{Sbp::P(), Sbp::S(0)});
  CHECK(route[3].sbp == NdSbp{Sbp::S(0), Sbp::S(0)});
  CHECK(route[4].sbp == NdSbp{Sbp::B(), Sbp::S(0)});
  for (size_t k = 0; k + 1 < route.size(); ++k) CHECK(plan_hop(grad, route, k).possible);
  CHECK(plan_hop(grad, route, 0).bytes_moved == 0);
  CHECK(plan_hop(grad, route, 5).bytes_moved == 0);
  // Lowered: every destination still sums all eight summands, and far fewer pieces cross ranks
  // (each copy here is a transfer between ranks): per device 1 piece of 1/8 for the reduce-
  // scatter across ranks, 2 for the all-gather on the devices whose part the other rank holds,
  // against 4 + 4 for the flat route.
  const Lowered hier = lower_hops(grad, partial, whole, &two_ranks, &two_ranks);
  const Lowered flat = lower_hops(grad, partial, whole, &two_ranks);
  for (const Lowered* l : {&hier, &flat}) {
    REQUIRE(l->reads.size() == 8);
    for (const auto& r : l->reads) CHECK(r.size() == 8);
  }
  CHECK(flat.copies == 64);
  CHECK(hier.copies == 16);
  CHECK(hier.nodes < flat.nodes);
  // The regrouping of partial sums is the rank view's alone: asked for directly, (P, P) -> (P, S)
  // is refused as before, so the SBP choice never meets it.
  const Placement mesh{{0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}};
  CHECK_FALSE(plan_boxing(grad, Layout{mesh, {Sbp::P(), Sbp::P()}}, Layout{mesh, {Sbp::P(), Sbp::S(0)}}).possible);
  CHECK(plan_boxing(grad, Layout{mesh, {Sbp::P(), Sbp::P()}}, Layout{mesh, {Sbp::P(), Sbp::S(0)}}, true).possible);
  // An all-gather (ZeRO's weights, split activations) and a reduce-scatter (ZeRO's gradients) over
  // the same ranks take their halves of the route: every destination still gets every source.
  const Layout split{eight, {Sbp::S(0)}};
  for (const auto& [a, b] : {std::pair{split, whole}, std::pair{partial, split}}) {
    const std::vector<Layout> half = boxing_route(grad, a, b, &two_ranks);
    REQUIRE(half.size() == 5);
    CHECK(half[1].placement.hierarchy == std::vector<int64_t>{2, 4});
    const Lowered h = lower_hops(grad, a, b, &two_ranks, &two_ranks), f = lower_hops(grad, a, b, &two_ranks);
    for (size_t j = 0; j < 8; ++j) CHECK(h.reads[j] == f.reads[j]);
    CHECK(h.copies < f.copies);
  }
  // Flat where the hierarchy has nothing to group: one rank, one device per rank, ranks interleaved.
  for (const std::vector<int32_t>& ranks : {std::vector<int32_t>(8, 0), std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7},
                                            std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 1}})
    CHECK(boxing_route(grad, partial, whole, &ranks).size() == 3);
}
