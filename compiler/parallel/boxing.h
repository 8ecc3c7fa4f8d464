// SPDX-License-Identifier: Apache-2.0
// Boxing: turning a tensor laid out one way (placement + SBP) into another, the single place that
// knows how. Planning works on regions: each destination device needs a box of the logical
// tensor, fully summed; the source holds boxes (one set per partial-sum summand). The plan lists,
// per destination device and summand, which source device sends which box; its cost is the bytes
// that cross devices, which is what SBP inference minimizes. Lowering turns a plan into ordinary
// nodes: slice on the source device, copy to the destination (the register transfer), concat and
// add there. So P->B is an all-reduce, P->S a reduce-scatter, S->B an all-gather, S(i)->S(j) an
// all-to-all, B->S a local slice, and a change of placement (pipeline stages) a copy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/parallel/sbp.h"

namespace of::compiler {

struct Layout {
  Placement placement;
  NdSbp sbp;
  bool operator==(const Layout&) const = default;
};

struct BoxingPiece {
  Region region;  // in logical coordinates
  size_t src;     // index into the source placement
};

struct BoxingPlan {
  bool possible = true;  // false: the destination needs partial sums made from something else
  // [destination device][summand] -> the pieces that tile the destination's region.
  std::vector<std::vector<std::vector<BoxingPiece>>> pieces;
  uint64_t bytes_moved = 0;  // bytes that leave their device
};

// A partial target is made from the same data seen through another hierarchy, from itself, or,
// with `regroup`, on the same placement from a source partial at the same levels and more: each
// destination sums the source summands of its group (within-rank sums on boxing_route's rank view).
BoxingPlan plan_boxing(const TensorDesc& logical, const Layout& from, const Layout& to, bool regroup = false);
// plan_boxing(...).possible, without building the pieces.
bool boxing_possible(const TensorDesc& logical, const Layout& from, const Layout& to, bool regroup = false);

// The layouts a conversion goes through: `from`, any intermediates, `to`. A partial sum over more
// than two devices that must become whole goes reduce-scatter then all-gather (each device sends
// 2(p-1)/p of the tensor instead of p-1 times it); everything else goes directly, except a
// partial sum no direct hop can bring into the target, which is summed whole first.
//
// With `rank_of_device`, an all-reduce along a level whose devices span ranks with several
// devices on each goes by the hierarchy instead (the level seen as [ranks, devices]): within each
// rank, reduce-scatter; across ranks, reduce-scatter and all-gather of those parts; within each
// rank, all-gather. An all-gather or a reduce-scatter along such a level takes its half of it.
// Each device then trades 2(R-1)/(R*D) of the tensor with other ranks, not 2(P-1)/P, in R + D
// pieces, not P. Over R = 2^k >= 4 ranks (of D >= 1 devices), the part across ranks goes by
// recursive halving and doubling instead, k pieces each way: a plan grows with P*(log R + D).
std::vector<Layout> boxing_route(const TensorDesc& logical, const Layout& from, const Layout& to,
                                 const std::vector<int32_t>* rank_of_device = nullptr);
// The plan of hop k of a route boxing_route gave (regrouping partial sums on its rank view only).
BoxingPlan plan_hop(const TensorDesc& logical, const std::vector<Layout>& route, size_t k);
// Bytes that leave their device along the route; 0 with possible = false when a hop cannot be made.
struct RouteCost {
  bool possible = true;
  uint64_t bytes = 0;
};
RouteCost route_cost(const TensorDesc& logical, const Layout& from, const Layout& to,
                     const std::vector<int32_t>* rank_of_device = nullptr);

// "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "slice", "copy", or "boxing".
std::string boxing_kind(const Layout& from, const Layout& to);

// Appends the nodes that carry out `plan` to `g`; `src[j]` is the value on source device j.
// Returns the value on each destination device. Node names start with `name`.
//
// With `rank_of_device` (the rank of each plan device), each destination that gathers several
// pieces or sums partial sums gets its part of the collective as one node, `collective_part`,
// that reads the pieces on its rank where they are and sums in summand order: one task per
// device and hop instead of the ~4P point-to-point slices, copies, concatenations and additions,
// with the same bits. Pieces only another rank holds reach it point to point first (slice there,
// copy here: the transfer tasks ranks need). A single piece (a slice, a copy) and work on local
// pieces only stay point to point, as does everything without `rank_of_device`.
std::vector<ValueId> lower_boxing(Graph& g, const BoxingPlan& plan, const TensorDesc& logical, const Layout& from,
                                  const Layout& to, const std::vector<ValueId>& src, const std::string& name,
                                  const std::vector<int32_t>* rank_of_device = nullptr);

// The op type of a collective part for a conversion of `boxing_kind`: "AllReduce", "ReduceScatter",
// "AllGather", "AllToAll" (else "Boxing").
std::string collective_op(const std::string& boxing_kind);

// `piece` of value v, which holds `have` of its logical tensor on `device`: a slice node per axis
// where they differ (named `name(axis)`), on that device; v itself where none does.
ValueId slice_region(Graph& g, ValueId v, Region have, const Region& piece, int32_t device, DType dtype,
                     const std::function<std::string(size_t axis)>& name);

// Adds a node running `kernel` on `device` with one output of `desc`; returns the output.
ValueId add_device_node(Graph& g, std::string name, std::string op, std::string kernel, Attrs attrs,
                        std::vector<ValueId> inputs, TensorDesc desc, int32_t device);

}  // namespace of::compiler
