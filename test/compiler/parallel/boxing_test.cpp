// SPDX-License-Identifier: Apache-2.0
// Boxing routes: every conversion the SBP choice may ask for can be lowered, hop by hop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
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
  // Flat where the hierarchy has nothing to group: one rank, ranks interleaved. One device per
  // rank halves and doubles across ranks (the next case).
  for (const std::vector<int32_t>& ranks : {std::vector<int32_t>(8, 0), std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 1}})
    CHECK(boxing_route(grad, partial, whole, &ranks).size() == 3);
  const std::vector<int32_t> apart{0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(boxing_route(grad, partial, whole, &apart).size() == 6);  // 2 KiB: summed whole, 3 pairwise steps
}

namespace {

// A tensor of the evaluator below: row-major floats.
struct Dense {
  of::Shape shape;
  std::vector<float> data;
};

std::vector<int64_t> strides(const of::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t a = s.size(); a-- > 1;) st[a - 1] = st[a] * s[a];
  return st;
}

// Copies (or adds) the box of `size` at `from` in x to `to` in y.
void copy_box(const Dense& x, const std::vector<int64_t>& from, Dense& y, const std::vector<int64_t>& to, const of::Shape& size, bool add) {
  const std::vector<int64_t> xs = strides(x.shape), ys = strides(y.shape);
  std::vector<int64_t> idx(size.size(), 0);
  for (int64_t n = of::numel(size), i = 0; i < n; ++i) {
    int64_t xo = 0, yo = 0;
    for (size_t a = 0; a < size.size(); ++a) {
      xo += (from[a] + idx[a]) * xs[a];
      yo += (to[a] + idx[a]) * ys[a];
    }
    y.data[size_t(yo)] = add ? y.data[size_t(yo)] + x.data[size_t(xo)] : x.data[size_t(xo)];
    for (size_t a = size.size(); a-- > 0;)
      if (++idx[a] < size[a]) break; else idx[a] = 0;
  }
}

// Runs the nodes lower_boxing made (slice, copy, concat, add, collective_part) on `in`.
std::map<ValueId, Dense> evaluate(const Graph& g, std::map<ValueId, Dense> in) {
  for (const Node& n : g.nodes) {
    const of::Shape& shape = g.values[size_t(n.outputs[0])].desc.shape;
    Dense y{shape, std::vector<float>(size_t(of::numel(shape)), 0.0f)};
    const std::vector<int64_t> zero(shape.size(), 0);
    if (n.kernel == "slice") {
      std::vector<int64_t> start = zero;
      start[size_t(n.kernel_attrs.get_int("axis", 0))] = n.kernel_attrs.get_int("start", 0);
      copy_box(in.at(n.inputs[0]), start, y, zero, shape, false);
    } else if (n.kernel == "copy") {
      y = in.at(n.inputs[0]);
    } else if (n.kernel == "concat") {
      const auto axis = size_t(n.kernel_attrs.get_int("axis", 0));
      std::vector<int64_t> at = zero;
      for (ValueId v : n.inputs) {
        const Dense& x = in.at(v);
        copy_box(x, zero, y, at, x.shape, false);
        at[axis] += x.shape[axis];
      }
    } else if (n.kernel == "add") {
      y = in.at(n.inputs[0]);
      copy_box(in.at(n.inputs[1]), zero, y, zero, shape, true);
    } else {
      REQUIRE(n.kernel == "collective_part");
      const std::vector<int64_t> p = n.kernel_attrs.get_ints("pieces");
      const size_t rank = shape.size(), per = 2 + 3 * rank;
      for (size_t b = 0; b < p.size(); b += per)
        copy_box(in.at(n.inputs[size_t(p[b + 1])]), {p.begin() + std::ptrdiff_t(b + 2), p.begin() + std::ptrdiff_t(b + 2 + rank)}, y,
                 {p.begin() + std::ptrdiff_t(b + 2 + rank), p.begin() + std::ptrdiff_t(b + 2 + 2 * rank)},
                 {p.begin() + std::ptrdiff_t(b + 2 + 2 * rank), p.begin() + std::ptrdiff_t(b + 2 + 3 * rank)}, p[b] > 0);
    }
    in[n.outputs[0]] = std::move(y);
  }
  return in;
}

// Lowers `from` -> `to` with the ranks as parallelize does and runs it: each source device holds
// its box of summand s as values (s + 1) * 1000 + element index (exact in float), and each
// destination must hold its box of their sum (of summand 0 alone when `from` has no partial).
// Returns the nodes per destination device.
double check_values(const of::TensorDesc& logical, const Layout& from, const Layout& to, const std::vector<int32_t>& ranks) {
  Graph g;
  const std::vector<ValueId> src = sources(g, logical, from);
  std::map<ValueId, Dense> in;
  int64_t summands = 1;
  for (size_t j = 0; j < from.placement.size(); ++j) summands = std::max(summands, partial_index(from.placement, from.sbp, j) + 1);
  auto value = [&](int64_t s, int64_t i) { return float((s + 1) * 1000 + i); };
  const std::vector<int64_t> whole = strides(logical.shape);
  for (size_t j = 0; j < src.size(); ++j) {
    const Region r = local_region(logical.shape, from.placement, from.sbp, j);
    Dense x{r.size, std::vector<float>(size_t(r.numel()))};
    const std::vector<int64_t> st = strides(r.size);
    for (int64_t i = 0; i < r.numel(); ++i) {
      int64_t flat = 0, rest = i;
      for (size_t a = 0; a < r.size.size(); ++a) {
        flat += (r.begin[a] + rest / st[a]) * whole[a];
        rest %= st[a];
      }
      x.data[size_t(i)] = value(partial_index(from.placement, from.sbp, j), flat);
    }
    in[src[j]] = std::move(x);
  }
  const std::vector<Layout> route = boxing_route(logical, from, to, &ranks);
  std::vector<ValueId> v = src;
  for (size_t k = 0; k + 1 < route.size(); ++k) {
    const BoxingPlan plan = plan_hop(logical, route, k);
    REQUIRE(plan.possible);
    v = lower_boxing(g, plan, logical, route[k], route[k + 1], v, "x/boxing", &ranks);
  }
  const std::map<ValueId, Dense> out = evaluate(g, std::move(in));
  for (size_t j = 0; j < v.size(); ++j) {
    const Region r = local_region(logical.shape, to.placement, to.sbp, j);
    const Dense& y = out.at(v[j]);
    REQUIRE(y.shape == r.size);
    const std::vector<int64_t> st = strides(r.size);
    int64_t wrong = 0;
    for (int64_t i = 0; i < r.numel(); ++i) {
      int64_t flat = 0, rest = i;
      for (size_t a = 0; a < r.size.size(); ++a) {
        flat += (r.begin[a] + rest / st[a]) * whole[a];
        rest %= st[a];
      }
      float want = 0;
      for (int64_t s = 0; s < summands; ++s) want += value(s, flat);
      wrong += y.data[size_t(i)] != want;
    }
    CHECK(wrong == 0);
  }
  return double(g.nodes.size()) / double(to.placement.size());
}

}  // namespace

TEST_CASE("boxing: an all-reduce over 2^k ranks halves across ranks, then doubles, with the exact sum on every device", "[compiler]") {
  const of::TensorDesc grad{{1024, 64}, of::DType::f32};  // 256 KiB: halved (a tensor of at most 64 KiB goes whole)
  auto ranks_of = [](int64_t r, int64_t g) {
    std::vector<int32_t> out;
    for (int64_t d = 0; d < r * g; ++d) out.push_back(int32_t(d / g));
    return out;
  };
  auto flat = [](int64_t n) {
    Placement p{{}, {n}};
    for (int32_t d = 0; d < int32_t(n); ++d) p.devices.push_back(d);
    return p;
  };
  // 8 ranks of 2: within each rank a reduce-scatter, 3 halving and 3 doubling hops across ranks,
  // an all-gather within; the hops into and out of the halving view only relabel.
  const Placement sixteen = flat(16);
  const std::vector<int32_t> eight_by_two = ranks_of(8, 2);
  const std::vector<Layout> route = boxing_route(grad, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, &eight_by_two);
  REQUIRE(route.size() == 13);
  CHECK(route[3].placement.hierarchy == std::vector<int64_t>{2, 2, 2, 2});
  CHECK(route[3].placement.devices == std::vector<int32_t>{0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(route[6].sbp == NdSbp{Sbp::S(0), Sbp::S(0), Sbp::S(0), Sbp::S(0)});
  for (size_t k : {size_t(0), size_t(2), size_t(9), size_t(11)}) CHECK(plan_hop(grad, route, k).bytes_moved == 0);
  // The same bytes cross ranks as on the direct route of the rank view; one piece a hop.
  uint64_t bytes = 0;
  for (size_t k = 0; k + 1 < route.size(); ++k) {
    const BoxingPlan plan = plan_hop(grad, route, k);
    bytes += plan.bytes_moved;
    if (k >= 3 && k < 9)
      for (const auto& summands : plan.pieces) {
        size_t pieces = 0;
        for (const auto& s : summands) pieces += s.size();
        CHECK(pieces == 2);
      }
  }
  const uint64_t tensor = 1024 * 64 * 4;
  CHECK(bytes == 16 * (tensor / 2 + 2 * (tensor / 2) * 7 / 8 + tensor / 2));
  CHECK(check_values(grad, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, eight_by_two) < 3 * 3 * 2 + 3);
  // One device per rank (dp over ranks): 16 ranks, 4 halving and 4 doubling hops.
  const std::vector<int32_t> sixteen_ranks = ranks_of(16, 1);
  CHECK(boxing_route(grad, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, &sixteen_ranks).size() == 11);
  CHECK(check_values(grad, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, sixteen_ranks) <= 4 * 3 * 2);
  // dp over 4 ranks x tp 2 within each: the dp level's all-reduce of a tensor split or partial over tp.
  const Placement mesh{{0, 1, 2, 3, 4, 5, 6, 7}, {4, 2}};
  const std::vector<int32_t> four_by_two = ranks_of(4, 2);
  for (const Sbp tp : {Sbp::S(1), Sbp::B()}) {
    const Layout a{mesh, {Sbp::P(), tp}}, b{mesh, {Sbp::B(), tp}};
    CHECK(boxing_route(grad, a, b, &four_by_two).size() == 7);
    check_values(grad, a, b, four_by_two);
  }
  // 4 ranks of 4 and 4 of 1 along a level of a 2-D mesh, ranks outermost.
  check_values(grad, Layout{flat(16), {Sbp::P()}}, Layout{flat(16), {Sbp::B()}}, ranks_of(4, 4));
  check_values(grad, Layout{flat(4), {Sbp::P()}}, Layout{flat(4), {Sbp::B()}}, ranks_of(4, 1));
  // A tensor no axis of which splits over the devices, or of at most 64 KiB (a bias), is summed
  // whole across ranks by recursive doubling: one pairwise sum per binary level, a copy and a
  // part each.
  const of::TensorDesc bias{{10}, of::DType::f32};
  CHECK(boxing_route(bias, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, &sixteen_ranks).size() == 7);
  const of::TensorDesc small{{1024}, of::DType::f32};  // splits over 16, but 4 KiB
  CHECK(boxing_route(small, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, &sixteen_ranks).size() == 7);
  check_values(small, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, sixteen_ranks);
  CHECK(check_values(bias, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, sixteen_ranks) == 4 * 2);
  check_values(bias, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, eight_by_two);
  check_values(of::TensorDesc{{2, 5}, of::DType::f32}, Layout{sixteen, {Sbp::P()}}, Layout{sixteen, {Sbp::B()}}, eight_by_two);
  // A gradient partial over dp across ranks and tp within each ((P, P) -> (B, B)) goes as one
  // all-reduce over the levels together: summed within each rank, then across by the tree.
  const Placement dp_tp{flat(32).devices, {4, 8}};
  const std::vector<int32_t> four_by_eight = ranks_of(4, 8);
  const Layout pp{dp_tp, {Sbp::P(), Sbp::P()}}, bb{dp_tp, {Sbp::B(), Sbp::B()}};
  CHECK(boxing_route(grad, pp, bb, &four_by_eight).size() == 1 + 12);
  CHECK(check_values(grad, pp, bb, four_by_eight) <= 1 + 2 * 3 + 2 * 2 + 1);
  check_values(bias, pp, bb, four_by_eight);
  const Placement square{{0, 1, 2, 3}, {2, 2}};
  check_values(grad, Layout{square, {Sbp::P(), Sbp::P()}}, Layout{square, {Sbp::B(), Sbp::B()}}, ranks_of(2, 2));
  // Not for 2 or 3 ranks: the rank view's direct route.
  const std::vector<int32_t> two_by_two = ranks_of(2, 2);
  CHECK(boxing_route(grad, Layout{flat(4), {Sbp::P()}}, Layout{flat(4), {Sbp::B()}}, &two_by_two).size() == 7);
  const of::TensorDesc odd{{3, 5}, of::DType::f32};
  check_values(odd, Layout{flat(8), {Sbp::P()}}, Layout{flat(8), {Sbp::B()}}, ranks_of(4, 2));
  check_values(grad, Layout{flat(6), {Sbp::P()}}, Layout{flat(6), {Sbp::B()}}, ranks_of(3, 2));
  // 128 devices (16 ranks of 8): plan_boxing finds a destination's sources by their boxes' starts
  // once a summand has 64 devices or more; the values are the same.
  const of::TensorDesc wide{{2048, 16}, of::DType::f32};  // 128 KiB: halved
  const std::vector<int32_t> sixteen_by_eight = ranks_of(16, 8);
  check_values(wide, Layout{flat(128), {Sbp::P()}}, Layout{flat(128), {Sbp::B()}}, sixteen_by_eight);
  check_values(wide, Layout{flat(128), {Sbp::S(0)}}, Layout{flat(128), {Sbp::B()}}, sixteen_by_eight);
  const of::TensorDesc square_tensor{{128, 128}, of::DType::f32};
  check_values(square_tensor, Layout{flat(128), {Sbp::S(1)}}, Layout{flat(128), {Sbp::S(0)}}, sixteen_by_eight);
}

TEST_CASE("boxing: a reduce-scatter and an all-gather over 2^k ranks take k pairwise hops across ranks, with the exact values", "[compiler]") {
  const of::TensorDesc grad{{1024, 64}, of::DType::f32};
  auto ranks_of = [](int64_t r, int64_t g) {
    std::vector<int32_t> out;
    for (int64_t d = 0; d < r * g; ++d) out.push_back(int32_t(d / g));
    return out;
  };
  const Placement sixteen{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {16}};
  const Layout partial{sixteen, {Sbp::P()}}, split{sixteen, {Sbp::S(0)}}, whole{sixteen, {Sbp::B()}};
  // Copies whose source and destination are on different ranks, per destination device.
  auto across = [&](const Layout& from, const Layout& to, const std::vector<int32_t>& ranks) {
    Graph g;
    std::vector<ValueId> v = sources(g, grad, from);
    // The device a value lives on: its producer's, or for a source value its place in `from`.
    std::map<ValueId, int32_t> source_device;
    for (size_t j = 0; j < v.size(); ++j) source_device[v[j]] = from.placement.devices[j];
    auto device_of = [&](ValueId x) {
      const NodeId p = g.values[size_t(x)].producer;
      return p >= 0 ? g.nodes[size_t(p)].device : source_device.at(x);
    };
    const std::vector<Layout> route = boxing_route(grad, from, to, &ranks);
    for (size_t k = 0; k + 1 < route.size(); ++k)
      v = lower_boxing(g, plan_hop(grad, route, k), grad, route[k], route[k + 1], v, "x/boxing", &ranks);
    size_t copies = 0;
    for (const Node& n : g.nodes)
      if (n.op_type == "Copy" && ranks[size_t(device_of(n.inputs[0]))] != ranks[size_t(n.device)]) ++copies;
    return double(copies) / 16;
  };
  // 8 ranks of 2: within each rank a reduce-scatter, 3 halving hops, then one piece per device
  // from the chunk-major order of the halving view to the level's; the all-gather the reverse.
  const std::vector<int32_t> eight_by_two = ranks_of(8, 2);
  const std::vector<Layout> rs = boxing_route(grad, partial, split, &eight_by_two);
  REQUIRE(rs.size() == 8);
  CHECK(rs[3].placement.devices == std::vector<int32_t>{0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(rs[6].sbp == NdSbp{Sbp::S(0), Sbp::S(0), Sbp::S(0), Sbp::S(0)});
  CHECK(boxing_route(grad, split, whole, &eight_by_two).size() == 8);
  check_values(grad, partial, split, eight_by_two);
  check_values(grad, split, whole, eight_by_two);
  CHECK(across(partial, split, eight_by_two) <= 3 + 1);  // the direct route: 7
  CHECK(across(split, whole, eight_by_two) <= 3 + 1);
  // One device per rank: the halving view is the level's own order, no piece moves to its place.
  const std::vector<int32_t> sixteen_ranks = ranks_of(16, 1);
  CHECK(boxing_route(grad, partial, split, &sixteen_ranks).size() == 7);
  check_values(grad, partial, split, sixteen_ranks);
  check_values(grad, split, whole, sixteen_ranks);
  CHECK(across(partial, split, sixteen_ranks) == 4);  // the direct route: 15
  CHECK(across(split, whole, sixteen_ranks) <= 4);
  // 128 devices as 16 ranks of 8, along the second axis; a tensor that does not split over the
  // halving view evenly takes another route.
  std::vector<int32_t> all;
  for (int32_t d = 0; d < 128; ++d) all.push_back(d);
  const Placement many{all, {128}};
  const of::TensorDesc wide{{16, 2048}, of::DType::f32};
  check_values(wide, Layout{many, {Sbp::P()}}, Layout{many, {Sbp::S(1)}}, ranks_of(16, 8));
  check_values(wide, Layout{many, {Sbp::S(1)}}, Layout{many, {Sbp::B()}}, ranks_of(16, 8));
  const of::TensorDesc odd{{40, 2}, of::DType::f32};  // 2.5 rows a device
  CHECK(boxing_route(odd, partial, split, &eight_by_two).size() == 2);
  check_values(odd, partial, split, eight_by_two);
  // Two ranks: the direct route (one piece across already).
  check_values(grad, Layout{Placement{{0, 1, 2, 3}, {4}}, {Sbp::P()}}, Layout{Placement{{0, 1, 2, 3}, {4}}, {Sbp::S(0)}}, ranks_of(2, 2));
}

TEST_CASE("boxing: boxing_possible says what plan_boxing builds, for every pair of layouts on a 2x4 mesh and its views", "[compiler]") {
  // The choice asks boxing_possible of candidate routes; lowering builds them with plan_boxing:
  // one rule, so the two must agree for every conversion, regrouped or not.
  const of::TensorDesc t{{8, 12}, of::DType::f32};
  const Placement flat{{0, 1, 2, 3, 4, 5, 6, 7}, {8}};
  const Placement mesh{{0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}};
  const Placement other{{4, 5, 6, 7, 0, 1, 2, 3}, {2, 4}};
  const Placement three{{0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}};
  std::vector<Layout> layouts;
  const std::vector<Sbp> kinds{Sbp::B(), Sbp::P(), Sbp::S(0), Sbp::S(1)};
  for (const Sbp& a : kinds) layouts.push_back(Layout{flat, {a}});
  for (const Placement* p : {&mesh, &other})
    for (const Sbp& a : kinds)
      for (const Sbp& b : kinds) layouts.push_back(Layout{*p, {a, b}});
  for (const Sbp& a : kinds)
    for (const Sbp& b : kinds) layouts.push_back(Layout{three, {a, Sbp::P(), b}});
  size_t possible = 0, refused = 0;
  for (const Layout& from : layouts)
    for (const Layout& to : layouts)
      for (bool regroup : {false, true}) {
        const bool built = plan_boxing(t, from, to, regroup).possible;
        CHECK(boxing_possible(t, from, to, regroup) == built);
        (built ? possible : refused) += 1;
      }
  CHECK(possible > 0);
  CHECK(refused > 0);
}

TEST_CASE("boxing: replicas are one box, taken from the destination itself when it holds one", "[compiler]") {
  const of::TensorDesc t{{1024, 8}, of::DType::f32};
  SECTION("broadcast over 1024 devices to rows: each device slices its own copy") {
    Placement all;
    for (int32_t d = 0; d < 1024; ++d) all.devices.push_back(d);
    all.hierarchy = {1024};
    const BoxingPlan plan = plan_boxing(t, Layout{all, {Sbp::B()}}, Layout{all, {Sbp::S(0)}});
    REQUIRE(plan.possible);
    CHECK(plan.bytes_moved == 0);
    REQUIRE(plan.pieces.size() == 1024);
    for (size_t j = 0; j < 1024; ++j) {
      REQUIRE(plan.pieces[j].size() == 1);
      REQUIRE(plan.pieces[j][0].size() == 1);
      CHECK(plan.pieces[j][0][0].src == j);
      CHECK(plan.pieces[j][0][0].region.begin == of::Shape{int64_t(j), 0});
    }
  }
  SECTION("broadcast on devices 0-3 to rows on devices 2-5: 2 and 3 keep theirs, 4 and 5 draw from device 0") {
    const Placement a{{0, 1, 2, 3}, {4}}, b{{2, 3, 4, 5}, {4}};
    const BoxingPlan plan = plan_boxing(t, Layout{a, {Sbp::B()}}, Layout{b, {Sbp::S(0)}});
    REQUIRE(plan.possible);
    std::vector<size_t> src;
    for (const auto& summands : plan.pieces) {
      REQUIRE(summands.size() == 1);
      REQUIRE(summands[0].size() == 1);
      src.push_back(summands[0][0].src);
    }
    CHECK(src == std::vector<size_t>{2, 3, 0, 0});
    CHECK(plan.bytes_moved == 2 * 256 * 8 * 4);
  }
  SECTION("rows split over two levels to broadcast: each destination draws every distinct box once") {
    const Placement mesh{{0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}};
    const BoxingPlan plan = plan_boxing(t, Layout{mesh, {Sbp::B(), Sbp::S(0)}}, Layout{mesh, {Sbp::B(), Sbp::B()}});
    REQUIRE(plan.possible);
    for (size_t j = 0; j < 8; ++j) {
      REQUIRE(plan.pieces[j].size() == 1);
      const std::vector<BoxingPiece>& pieces = plan.pieces[j][0];
      REQUIRE(pieces.size() == 4);
      // Box k is held by devices k and 4 + k; a destination in the second half takes its own row.
      for (size_t k = 0; k < 4; ++k) CHECK(pieces[k].src == (j >= 4 && k == j - 4 ? j : (j < 4 && k == j ? j : k)));
    }
    CHECK(plan.bytes_moved == 8 * 3 * 256 * 8 * 4);
  }
}

// A row-parallel layer's bias gradient: partial over dp across ranks, split over tp within each,
// and wanted whole everywhere ((P, S(0)) -> (B, B)). One level at a time: all-reduced over dp by
// the tree while still split, then gathered within each rank. Point to point each device took a
// piece from every rank: the GPT on 128x8 with --dp 512 --tp 2 did not fit 16 GB in ofc.
TEST_CASE("boxing: a gradient partial over ranks and split within each is reduced by the tree, then gathered", "[compiler]") {
  auto ranks_of = [](int64_t r, int64_t g) {
    std::vector<int32_t> out;
    for (int64_t d = 0; d < r * g; ++d) out.push_back(int32_t(d / g));
    return out;
  };
  for (const int64_t ranks : {int64_t(4), int64_t(8), int64_t(16)}) {
    INFO(ranks << " ranks of 2");
    Placement mesh{{}, {ranks, 2}};
    for (int32_t d = 0; d < int32_t(ranks * 2); ++d) mesh.devices.push_back(d);
    const std::vector<int32_t> rank_of = ranks_of(ranks, 2);
    for (const of::TensorDesc& t : {of::TensorDesc{{256}, of::DType::f32}, of::TensorDesc{{1024, 64}, of::DType::f32}}) {
      const Layout grad{mesh, {Sbp::P(), Sbp::S(0)}}, whole{mesh, {Sbp::B(), Sbp::B()}};
      const std::vector<Layout> route = boxing_route(t, grad, whole, &rank_of);
      REQUIRE(route.size() >= 3);
      const Layout reduced{mesh, {Sbp::B(), Sbp::S(0)}};
      CHECK(std::find(route.begin(), route.end(), reduced) != route.end());
      // log2(R) pairwise steps each way at most, not a piece from every rank.
      int steps = 0;
      while ((int64_t(1) << steps) < ranks) ++steps;
      CHECK(check_values(t, grad, whole, rank_of) <= 2 * 3 * steps + 6);
    }
  }
  // Two ranks: the tree does not apply, nor does this (the direct route, today's bits).
  Placement two{{0, 1, 2, 3}, {2, 2}};
  const std::vector<int32_t> two_by_two = ranks_of(2, 2);
  const of::TensorDesc bias{{256}, of::DType::f32};
  CHECK(boxing_route(bias, Layout{two, {Sbp::P(), Sbp::S(0)}}, Layout{two, {Sbp::B(), Sbp::B()}}, &two_by_two).size() == 2);
}
