// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/boxing.h"

#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "common/error.h"
#include "kernels/catalog.h"

namespace of::compiler {
namespace {

bool intersect(const Region& a, const Region& b, Region& out) {
  out = a;
  for (size_t k = 0; k < a.begin.size(); ++k) {
    const int64_t lo = std::max(a.begin[k], b.begin[k]);
    const int64_t hi = std::min(a.begin[k] + a.size[k], b.begin[k] + b.size[k]);
    if (hi <= lo) return false;
    out.begin[k] = lo;
    out.size[k] = hi - lo;
  }
  return true;
}

bool has_partial(const NdSbp& s) {
  return std::any_of(s.begin(), s.end(), [](const Sbp& x) { return x.is_partial(); });
}

using Namer = std::function<std::string(const char* what, int32_t device)>;

// `piece` of the value `v` (which holds `have` of the logical tensor, on `src_device`), on
// `device`: sliced where it holds more, on its own device, then copied (a transfer task).
ValueId move_piece(Graph& g, ValueId v, Region have, const Region& piece, int32_t src_device, int32_t device, DType dtype,
                   const Namer& fresh) {
  v = slice_region(g, v, have, piece, src_device, dtype, [&](size_t) { return fresh("slice", src_device); });
  if (src_device != device) v = add_device_node(g, fresh("copy", device), "Copy", "copy", {}, {v}, TensorDesc{piece.size, dtype}, device);
  return v;
}

// Device `device`'s part of the conversion as one collective_part node that reads the pieces on
// its rank where they are and sums the summands in order; pieces only another rank holds come
// first by slice and copy (point to point: the transfer tasks ranks need). kNoValue where a part
// would do nothing the point-to-point nodes do not: a single piece (a slice or a copy), or pieces
// all on this device.
ValueId lower_part(Graph& g, const std::vector<std::vector<BoxingPiece>>& summands, const TensorDesc& logical,
                   const Layout& from, const Region& want, int32_t device, const std::vector<ValueId>& src,
                   const std::vector<int32_t>& rank_of_device, const std::string& op, const std::string& name, const Namer& fresh) {
  if (!kernels::kernel_exists("collective_part", kernels::DeviceKind::cpu, logical.dtype)) return kNoValue;
  if (summands.size() > 1 && logical.dtype != DType::f32) return kNoValue;
  if (summands.size() == 1 && summands[0].size() == 1) return kNoValue;
  const int32_t rank = rank_of_device[size_t(device)];
  auto on_rank = [&](size_t j) { return rank_of_device[size_t(from.placement.devices[j])] == rank; };
  bool elsewhere = false;
  for (const std::vector<BoxingPiece>& pieces : summands)
    for (const BoxingPiece& p : pieces) elsewhere = elsewhere || from.placement.devices[p.src] != device;
  if (!elsewhere) return kNoValue;
  std::vector<ValueId> inputs;
  std::vector<int64_t> attr;
  for (size_t s = 0; s < summands.size(); ++s)
    for (BoxingPiece p : summands[s]) {
      Region have = local_region(logical.shape, from.placement, from.sbp, p.src);
      // A piece planned from another rank may come from a replica on this one: the same summand
      // and region, so the same bits (a (B, P) tensor's summands repeat on every rank).
      const int64_t summand = partial_index(from.placement, from.sbp, p.src);
      for (size_t j = 0; j < from.placement.size() && !on_rank(p.src); ++j)
        if (on_rank(j) && partial_index(from.placement, from.sbp, j) == summand && local_region(logical.shape, from.placement, from.sbp, j) == have)
          p.src = j;
      ValueId v = src[p.src];
      if (!on_rank(p.src)) {
        v = move_piece(g, v, have, p.region, from.placement.devices[p.src], device, logical.dtype, fresh);
        have = p.region;
      }
      auto at = std::find(inputs.begin(), inputs.end(), v);
      if (at == inputs.end()) at = inputs.insert(inputs.end(), v);
      attr.push_back(int64_t(s));
      attr.push_back(int64_t(at - inputs.begin()));
      for (size_t a = 0; a < have.begin.size(); ++a) attr.push_back(p.region.begin[a] - have.begin[a]);
      for (size_t a = 0; a < want.begin.size(); ++a) attr.push_back(p.region.begin[a] - want.begin[a]);
      for (int64_t extent : p.region.size) attr.push_back(extent);
    }
  Attrs attrs;
  attrs.set_ints("pieces", std::move(attr));
  return add_device_node(g, fmt::format("{}/{}@{}", name, op, device), op, "collective_part", std::move(attrs), std::move(inputs),
                         TensorDesc{want.size, logical.dtype}, device);
}

}  // namespace

ValueId slice_region(Graph& g, ValueId v, Region have, const Region& piece, int32_t device, DType dtype,
                     const std::function<std::string(size_t axis)>& name) {
  for (size_t a = 0; a < have.begin.size(); ++a) {
    if (have.begin[a] == piece.begin[a] && have.size[a] == piece.size[a]) continue;
    Attrs attrs;
    attrs.set_int("axis", int64_t(a));
    attrs.set_int("start", piece.begin[a] - have.begin[a]);
    have.begin[a] = piece.begin[a];
    have.size[a] = piece.size[a];
    v = add_device_node(g, name(a), "Slice", "slice", std::move(attrs), {v}, TensorDesc{have.size, dtype}, device);
  }
  return v;
}

std::string collective_op(const std::string& kind) {
  if (kind == "all-reduce") return "AllReduce";
  if (kind == "reduce-scatter") return "ReduceScatter";
  if (kind == "all-gather") return "AllGather";
  if (kind == "all-to-all") return "AllToAll";
  return "Boxing";
}

namespace {

// For each device of `b`, its position in `a`; empty unless `b` lists the same devices as `a` in
// some order (the tree route's placement lists a level's devices in another order).
std::vector<size_t> positions_in(const Placement& a, const Placement& b) {
  if (a.size() != b.size()) return {};
  std::vector<size_t> out(b.size());
  if (a.devices == b.devices) {
    for (size_t j = 0; j < b.size(); ++j) out[j] = j;
    return out;
  }
  int32_t most = -1;
  for (int32_t d : a.devices) most = std::max(most, d);
  std::vector<int64_t> at(size_t(most) + 1, -1);
  for (size_t j = 0; j < a.size(); ++j) at[size_t(a.devices[j])] = int64_t(j);
  for (size_t j = 0; j < b.size(); ++j) {
    const int32_t d = b.devices[j];
    if (d < 0 || d > most || at[size_t(d)] < 0) return {};
    out[j] = size_t(at[size_t(d)]);
    at[size_t(d)] = -1;  // each device once
  }
  return out;
}

}  // namespace

// Whether every device holds the same box and summand under both layouts: a relabelling (one level
// seen as two, or a level's devices listed in another order), where nothing moves.
bool same_data(const TensorDesc& logical, const Layout& a, const Layout& b) {
  if (has_partial(a.sbp) != has_partial(b.sbp)) return false;
  const std::vector<size_t> at = positions_in(a.placement, b.placement);
  if (at.size() != b.placement.size()) return false;
  for (size_t j = 0; j < b.placement.size(); ++j)
    if (local_region(logical.shape, a.placement, a.sbp, at[j]) != local_region(logical.shape, b.placement, b.sbp, j) ||
        partial_index(a.placement, a.sbp, at[j]) != partial_index(b.placement, b.sbp, j))
      return false;
  return true;
}

namespace {

// A partial sum stays one only at levels where it already is, on the same placement: each
// destination then sums the source summands that share its coordinates at those levels (a
// reduce-scatter within each group of a level, the others' summands kept apart). Whether `to`
// can be made so from `from` (true when `to` is partial nowhere).
bool partial_sums_kept(const Layout& from, const Layout& to, bool regroup) {
  const bool partial = std::any_of(to.sbp.begin(), to.sbp.end(), [](const Sbp& s) { return s.is_partial(); });
  if (!partial) return true;
  if (from.placement != to.placement || !(regroup || from == to)) return false;
  for (size_t l = 0; l < to.sbp.size(); ++l)
    if (to.sbp[l].is_partial() && !from.sbp[l].is_partial()) return false;
  return true;
}

// Only the rank views rank_route makes (a level seen as two or more) have partial sums
// regrouped: hops onto more levels than the route's fewest.
bool regrouped(const std::vector<Layout>& route, size_t k) {
  size_t fewest = route.front().placement.hierarchy.size();
  for (const Layout& l : route) fewest = std::min(fewest, l.placement.hierarchy.size());
  return route[k + 1].placement.hierarchy.size() > fewest;
}

}  // namespace

bool boxing_possible(const TensorDesc& logical, const Layout& from, const Layout& to, bool regroup) {
  return same_data(logical, from, to) || partial_sums_kept(from, to, regroup);
}

BoxingPlan plan_boxing(const TensorDesc& logical, const Layout& from, const Layout& to, bool regroup) {
  BoxingPlan plan;
  if (same_data(logical, from, to)) {  // a relabelling: nothing moves
    const std::vector<size_t> at = positions_in(from.placement, to.placement);
    plan.pieces.resize(to.placement.size());
    for (size_t j = 0; j < to.placement.size(); ++j)
      plan.pieces[j] = {{BoxingPiece{local_region(logical.shape, to.placement, to.sbp, j), at[j]}}};
    return plan;
  }
  plan.possible = partial_sums_kept(from, to, regroup);
  if (!plan.possible) return plan;
  std::vector<size_t> kept;  // the levels partial in `to`
  for (size_t l = 0; l < to.sbp.size(); ++l)
    if (to.sbp[l].is_partial()) kept.push_back(l);
  const auto elem = uint64_t(dtype_size(logical.dtype));
  // Source devices by summand; within a summand, devices holding the same region are replicas.
  std::map<int64_t, std::vector<size_t>> summands;
  for (size_t s = 0; s < from.placement.size(); ++s) summands[partial_index(from.placement, from.sbp, s)].push_back(s);
  // Said once, not per destination: plans over a thousand devices ask this a million times.
  std::vector<Region> have(from.placement.size());
  for (size_t s = 0; s < from.placement.size(); ++s) have[s] = local_region(logical.shape, from.placement, from.sbp, s);
  std::vector<std::vector<int64_t>> entry_coords;  // per summand: the coordinates of its first device
  for (const auto& entry : summands) entry_coords.push_back(from.placement.coords(entry.second.front()));
  auto overlaps = [](const Region& a, const Region& b) {
    for (size_t k = 0; k < a.begin.size(); ++k)
      if (std::min(a.begin[k] + a.size[k], b.begin[k] + b.size[k]) <= std::max(a.begin[k], b.begin[k])) return false;
    return true;
  };
  // Within a summand, devices holding the same box are replicas (boxes of one layout are cells of
  // one grid: equal or disjoint). Each summand's distinct boxes are listed once, in the order of
  // their first device; a destination takes a box from its own device when that holds it (nothing
  // moves), else from the box's first device. A broadcast over a thousand devices is then one box,
  // not a thousand sources to test per destination.
  std::vector<int64_t> box_of(from.placement.size(), -1);      // per source: its index among its summand's boxes
  std::vector<int64_t> summand_of(from.placement.size(), -1);  // per source: its summand's index
  // Per summand, per distinct box: its first source device (an index into the source placement).
  std::vector<std::vector<size_t>> boxes(summands.size());
  {
    size_t e = 0;
    std::map<std::pair<Shape, Shape>, size_t> seen;
    for (auto it = summands.begin(); it != summands.end(); ++it, ++e) {
      seen.clear();
      for (size_t src : it->second) {
        const auto [at, fresh] = seen.try_emplace({have[src].begin, have[src].size}, boxes[e].size());
        if (fresh) boxes[e].push_back(src);
        box_of[src] = int64_t(at->second);
        summand_of[src] = int64_t(e);
      }
    }
  }
  // Per destination device: its index in the source placement, or -1.
  std::vector<int64_t> source_at;
  for (size_t s = 0; s < from.placement.size(); ++s) {
    const auto d = size_t(from.placement.devices[s]);
    if (d >= source_at.size()) source_at.resize(d + 1, -1);
    source_at[d] = int64_t(s);
  }
  // A summand of many boxes: its boxes sorted by their start along the axis where they start at
  // the most places, so that each destination tries only the boxes that can overlap it there (a
  // hop over a thousand devices would otherwise try a million pairs).
  struct ByStart {
    size_t axis = 0;
    int64_t widest = 0;
    std::vector<std::pair<int64_t, size_t>> starts;  // (start along axis, box), ascending
  };
  std::vector<ByStart> by_start(summands.size());
  for (size_t e = 0; e < boxes.size(); ++e) {
    if (boxes[e].size() < 64 || logical.shape.empty()) continue;
    ByStart& b = by_start[e];
    size_t most = 0;
    for (size_t a = 0; a < logical.shape.size(); ++a) {
      std::vector<int64_t> starts;
      for (size_t first : boxes[e]) starts.push_back(have[first].begin[a]);
      std::sort(starts.begin(), starts.end());
      const auto distinct = size_t(std::unique(starts.begin(), starts.end()) - starts.begin());
      if (distinct > most) most = distinct, b.axis = a;
    }
    for (size_t u = 0; u < boxes[e].size(); ++u) {
      const Region& r = have[boxes[e][u]];
      b.starts.emplace_back(r.begin[b.axis], u);
      b.widest = std::max(b.widest, r.size[b.axis]);
    }
    std::sort(b.starts.begin(), b.starts.end());
  }
  // The summands a destination draws from are those whose coordinates at the kept levels are its
  // own (devices of one summand share their coordinates at every level partial in `from`):
  // indexed by those coordinates, in summand order, so that a reduce-scatter over a thousand
  // summands does not test a million pairs.
  std::map<std::vector<int64_t>, std::vector<size_t>> summands_at;
  for (size_t e = 0; e < entry_coords.size(); ++e) {
    std::vector<int64_t> key;
    for (size_t l : kept) key.push_back(entry_coords[e][l]);
    summands_at[key].push_back(e);
  }
  std::vector<size_t> near;  // a destination's candidate boxes of one summand, ascending
  std::vector<int64_t> key;
  plan.pieces.resize(to.placement.size());
  for (size_t j = 0; j < to.placement.size(); ++j) {
    const Region want = local_region(logical.shape, to.placement, to.sbp, j);
    const int32_t device = to.placement.devices[j];
    const int64_t here = size_t(device) < source_at.size() ? source_at[size_t(device)] : -1;
    const std::vector<int64_t> at = to.placement.coords(j);
    key.clear();
    for (size_t l : kept) key.push_back(at[l]);
    const auto drawn = summands_at.find(key);
    if (drawn == summands_at.end()) continue;
    for (size_t e : drawn->second) {
      const ByStart& b = by_start[e];
      near.clear();
      if (!b.starts.empty()) {
        // Boxes that overlap `want` along the axis start after want's start less the widest box
        // and before its end; in the order of their first devices, as a full scan takes them.
        const int64_t lo = want.begin[b.axis] - b.widest, hi = want.begin[b.axis] + want.size[b.axis];
        for (auto at_start = std::upper_bound(b.starts.begin(), b.starts.end(), std::make_pair(lo, SIZE_MAX));
             at_start != b.starts.end() && at_start->first < hi; ++at_start)
          near.push_back(at_start->second);
        std::sort(near.begin(), near.end());
      } else {
        for (size_t u = 0; u < boxes[e].size(); ++u) near.push_back(u);
      }
      std::vector<BoxingPiece> pieces;
      for (size_t u : near) {
        size_t s = boxes[e][u];
        Region part;
        if (!overlaps(want, have[s]) || !intersect(want, have[s], part)) continue;
        if (here >= 0 && summand_of[size_t(here)] == int64_t(e) && box_of[size_t(here)] == int64_t(u)) s = size_t(here);
        pieces.push_back(BoxingPiece{part, s});
      }
      for (const BoxingPiece& p : pieces)
        if (from.placement.devices[p.src] != device) plan.bytes_moved += uint64_t(p.region.numel()) * elem;
      plan.pieces[j].push_back(std::move(pieces));
    }
  }
  return plan;
}

BoxingPlan plan_hop(const TensorDesc& logical, const std::vector<Layout>& route, size_t k) {
  return plan_boxing(logical, route[k], route[k + 1], regrouped(route, k));
}

namespace {

// The size of the rank groups along level `l` of `p`: g > 1 when the level's n devices fall into
// n / g runs of g consecutive coordinates on one rank each, the same for every line along the
// level; 0 otherwise (one rank, or one device per rank, or ranks interleaved).
int64_t rank_group(const Placement& p, size_t l, const std::vector<int32_t>& rank_of_device) {
  const int64_t n = p.hierarchy[l];
  int64_t stride = 1;
  for (size_t k = l + 1; k < p.hierarchy.size(); ++k) stride *= p.hierarchy[k];
  auto rank = [&](size_t j) { return rank_of_device[size_t(p.devices[j])]; };
  int64_t g = 1;
  while (g < n && rank(size_t(g * stride)) == rank(0)) ++g;
  if (g <= 1 || g >= n || n % g != 0) return 0;
  // Every device shares its rank with its predecessor along the level exactly inside a run.
  for (size_t j = 0; j < p.size(); ++j) {
    const int64_t c = p.coords(j)[l];
    if (c > 0 && (rank(j) == rank(j - size_t(stride))) != (c % g != 0)) return 0;
  }
  return g;
}

// Whether every hop of `route` is one plan_hop can build (by plan_boxing's rule, without building
// the hops: the choice asks this of many candidate routes over up to a thousand devices).
bool route_possible(const TensorDesc& logical, const std::vector<Layout>& route) {
  for (size_t k = 0; k + 1 < route.size(); ++k)
    if (!boxing_possible(logical, route[k], route[k + 1], regrouped(route, k))) return false;
  return true;
}

// `from` with level `level` seen as two, [ranks, g devices of a rank], laid out `across` and
// `within` there (the other levels as they are).
Layout by_rank(const Layout& from, size_t level, int64_t g, Sbp across, Sbp within) {
  Layout out = from;
  out.placement.hierarchy[level] /= g;
  out.placement.hierarchy.insert(out.placement.hierarchy.begin() + std::ptrdiff_t(level) + 1, g);
  out.sbp[level] = across;
  out.sbp.insert(out.sbp.begin() + std::ptrdiff_t(level) + 1, within);
  return out;
}

// Whether along level `l` of `p` every line's devices are on distinct ranks: a level of one device
// per rank (dp over ranks, tp within each).
bool ranks_apart(const Placement& p, size_t l, const std::vector<int32_t>& rank_of_device) {
  int64_t stride = 1;
  for (size_t k = l + 1; k < p.hierarchy.size(); ++k) stride *= p.hierarchy[k];
  std::vector<int32_t> line;
  for (size_t j = 0; j < p.size(); ++j) {
    if (p.coords(j)[l] != 0) continue;
    line.clear();
    for (int64_t c = 0; c < p.hierarchy[l]; ++c) line.push_back(rank_of_device[size_t(p.devices[j + size_t(c * stride)])]);
    std::sort(line.begin(), line.end());
    if (std::adjacent_find(line.begin(), line.end()) != line.end()) return false;
  }
  return p.hierarchy[l] > 1;
}

// An all-reduce along level `level` of `from`, whose n devices are R = 2^k >= 4 rank groups of g
// devices each (g = 1: one device per rank), across ranks by recursive halving, then doubling
// (Rabenseifner's): within each rank a reduce-scatter gives device d chunk d of its rank's sum
// (g > 1); then k pairwise hops, each with the device d of another rank, halve what device d
// sums until it holds 1/R of chunk d summed over all ranks; k more pairwise hops double it back to
// chunk d whole; within each rank an all-gather. Each device trades what the direct route trades
// across ranks (2(R-1)/(R*g) of the tensor), in 2k pieces instead of 2(R-1): a plan of R ranks
// grows with R log R, not R^2. The halving hops run on the level seen as [g, 2, ..., 2] with its
// devices listed chunk by chunk (device d of every rank together), so that the binary levels
// split chunk d; the hops into and out of that view only relabel. Empty where it does not apply:
// R not a power of two of at least 4 (two ranks: the direct route is already one piece).
//
// A reduce-scatter takes the first half (within, then halving) and an all-gather the second
// (doubling, then within), each with one more hop: the halving view's blocks are chunk-major
// (device d of rank r holds block d*R + r), the level's rank-major (block r*g + d), so one piece
// per device moves each block to its place (a relabelling when g = 1). Each device then trades
// k pieces across ranks, not R - 1, and 1/(R*g) of the tensor more than the direct route.
enum class Collective { all_reduce, reduce_scatter, all_gather };

std::vector<Layout> tree_route(const TensorDesc& logical, const Layout& from, const Layout& to, size_t level, int64_t g,
                               Collective kind) {
  const std::vector<int64_t>& hier = from.placement.hierarchy;
  const int64_t n = hier[level], ranks = n / g;
  int k = 0;
  while ((int64_t(1) << k) < ranks) ++k;
  if (ranks < 4 || (int64_t(1) << k) != ranks || ranks * g != n) return {};
  Placement tree;
  tree.hierarchy.assign(hier.begin(), hier.begin() + std::ptrdiff_t(level));
  if (g > 1) tree.hierarchy.push_back(g);
  tree.hierarchy.insert(tree.hierarchy.end(), size_t(k), 2);
  tree.hierarchy.insert(tree.hierarchy.end(), hier.begin() + std::ptrdiff_t(level) + 1, hier.end());
  tree.devices.resize(from.placement.size());
  for (size_t j = 0; j < tree.size(); ++j) {
    const std::vector<int64_t> c = tree.coords(j);
    size_t at = level;
    const int64_t d = g > 1 ? c[at++] : 0;
    int64_t r = 0;
    for (int b = 0; b < k; ++b) r = r * 2 + c[at++];
    size_t pos = 0;
    for (size_t l = 0; l < hier.size(); ++l) {
      const int64_t coord = l < level ? c[l] : l == level ? r * g + d : c[at + (l - level - 1)];
      pos = pos * size_t(hier[l]) + size_t(coord);
    }
    tree.devices[j] = from.placement.devices[pos];
  }
  // [ranks, g]: the within-rank hops' view, rank by rank.
  auto on_wide = [&](Sbp across, Sbp within) { return by_rank(from, level, g, across, within); };
  auto on_tree = [&](Sbp chunk, const std::vector<Sbp>& bits) {
    Layout out{tree, {}};
    out.sbp.assign(from.sbp.begin(), from.sbp.begin() + std::ptrdiff_t(level));
    if (g > 1) out.sbp.push_back(chunk);
    out.sbp.insert(out.sbp.end(), bits.begin(), bits.end());
    out.sbp.insert(out.sbp.end(), from.sbp.begin() + std::ptrdiff_t(level) + 1, from.sbp.end());
    return out;
  };
  // The route's halves, shared by the three collectives. Each appends to `route` (a layout equal
  // to its last is skipped). The first: within each rank a reduce-scatter to `chunk` (g > 1),
  // then, if `halved`, k halving hops across ranks; it leaves the binary levels chunk-split, or
  // still partial. The second: k doubling hops from those levels, then within each rank an
  // all-gather of `chunk` (g > 1).
  auto add = [](std::vector<Layout>& route, const Layout& l) {
    if (!(l == route.back())) route.push_back(l);
  };
  auto reduce_half = [&](std::vector<Layout>& route, Sbp chunk, bool halved) {
    if (g > 1) {
      add(route, on_wide(Sbp::P(), Sbp::P()));
      add(route, on_wide(Sbp::P(), chunk));
    }
    std::vector<Sbp> bits(size_t(k), Sbp::P());
    add(route, on_tree(chunk, bits));
    for (int b = 0; halved && b < k; ++b) {
      bits[size_t(b)] = chunk;
      add(route, on_tree(chunk, bits));
    }
    return bits;
  };
  auto gather_half = [&](std::vector<Layout>& route, Sbp chunk, std::vector<Sbp> bits) {
    for (int b = k; b-- > 0;) {
      bits[size_t(b)] = Sbp::B();
      add(route, on_tree(chunk, bits));
    }
    if (g > 1) {
      add(route, on_wide(Sbp::B(), chunk));
      add(route, on_wide(Sbp::B(), Sbp::B()));
    }
  };
  if (kind != Collective::all_reduce) {
    const Sbp split = kind == Collective::reduce_scatter ? to.sbp[level] : from.sbp[level];
    const std::vector<Sbp> halved(size_t(k), split);
    if (!splits_evenly(logical.shape, tree, on_tree(split, halved).sbp)) return {};
    std::vector<Layout> route{from};
    if (kind == Collective::reduce_scatter) {
      reduce_half(route, split, true);
    } else {
      add(route, on_tree(split, halved));
      gather_half(route, split, halved);
    }
    add(route, to);
    return route_possible(logical, route) ? route : std::vector<Layout>{};
  }
  // Candidates, best first: chunks halved across ranks (an axis splits over all n devices); each
  // rank's chunk (split over its g devices) or its whole sum, all-reduced across ranks by
  // recursive doubling (k pairwise sums of what each device holds: k times its bytes across ranks,
  // not R - 1 times as the direct route moves them; small tensors, like biases, come here).
  std::vector<std::pair<Sbp, bool>> candidates;  // (the chunk's SBP within a rank, halved across ranks)
  // A small tensor (a bias, a LayerNorm's scale) goes whole: k pairwise steps of a copy and a sum
  // instead of 2k of up to a slice, a copy and a sum. Below kWholeBytes each step costs its
  // latency more than its bytes (about 10 us against 64 KiB at 10 GB/s), so the route with fewer
  // steps is the faster, and the plan has fewer tasks.
  constexpr uint64_t kWholeBytes = 64 * 1024;
  const bool small = uint64_t(numel(logical.shape)) * uint64_t(dtype_size(logical.dtype)) <= kWholeBytes;
  if (small) candidates.emplace_back(Sbp::B(), false);
  for (size_t a = 0; a < logical.shape.size(); ++a) candidates.emplace_back(Sbp::S(int64_t(a)), true);
  if (g > 1)
    for (size_t a = 0; a < logical.shape.size(); ++a) candidates.emplace_back(Sbp::S(int64_t(a)), false);
  if (!small) candidates.emplace_back(Sbp::B(), false);
  for (const auto& [chunk, halved] : candidates) {
    if (g == 1 && chunk.is_split() && !halved) continue;
    if (!splits_evenly(logical.shape, tree, on_tree(chunk, std::vector<Sbp>(size_t(k), halved ? chunk : Sbp::P())).sbp)) continue;
    std::vector<Layout> route{from};
    gather_half(route, chunk, reduce_half(route, chunk, halved));
    add(route, to);
    if (route_possible(logical, route)) return route;
  }
  return {};
}

// An all-reduce, all-gather or reduce-scatter along a level whose devices span ranks, as the
// hierarchy does it: the level seen as [ranks, devices of a rank]. An all-reduce reduce-scatters
// within each rank, reduce-scatters and all-gathers those parts across ranks (device k of a rank
// trades 1/g of the tensor with the other ranks), and all-gathers within each rank; the other two
// take their halves. Over 2^k >= 4 rank groups all three go by tree_route instead. Empty
// where it does not apply (with `tree_only`, where tree_route does not).
std::vector<Layout> rank_route(const TensorDesc& logical, const Layout& from, const Layout& to,
                               const std::vector<int32_t>& rank_of_device, bool tree_only = false) {
  if (!(from.placement == to.placement)) return {};
  size_t level = from.sbp.size();
  for (size_t l = 0; l < from.sbp.size(); ++l) {
    if (from.sbp[l] == to.sbp[l]) continue;
    if (level != from.sbp.size()) return {};
    level = l;
  }
  if (level == from.sbp.size()) return {};
  const Sbp was = from.sbp[level], becomes = to.sbp[level];
  const bool all_reduce = was.is_partial() && becomes.kind == Sbp::Kind::broadcast;
  const bool all_gather = was.is_split() && becomes.kind == Sbp::Kind::broadcast;
  const bool reduce_scatter = was.is_partial() && becomes.is_split();
  if (!all_reduce && !all_gather && !reduce_scatter) return {};
  const int64_t g = rank_group(from.placement, level, rank_of_device);
  if (g > 0 || ranks_apart(from.placement, level, rank_of_device)) {
    const Collective kind = all_reduce ? Collective::all_reduce : all_gather ? Collective::all_gather : Collective::reduce_scatter;
    std::vector<Layout> tree = tree_route(logical, from, to, level, std::max<int64_t>(g, 1), kind);
    if (!tree.empty() || tree_only) return tree;
  }
  if (g == 0 || tree_only) return {};
  const Placement wide = by_rank(from, level, g, Sbp::B(), Sbp::B()).placement;
  auto with = [&](Sbp across, Sbp within) { return by_rank(from, level, g, across, within); };
  const Layout both = with(Sbp::P(), Sbp::P()), done = with(Sbp::B(), Sbp::B());
  // Its first and last hops only relabel the same data (a split over the level is the same split
  // over [ranks, devices], rank-major).
  auto relabels = [&](const std::vector<Layout>& route) {
    return same_data(logical, route[0], route[1]) && same_data(logical, route[route.size() - 2], route.back());
  };
  if (all_gather || reduce_scatter) {
    // An all-gather: across ranks first, to (B, S), where each device holds 1/D of the tensor
    // (fetched from the one or two ranks that hold it), then the rest from its own rank. A
    // reduce-scatter: within each rank first, then across, to the same split seen flat.
    const Sbp s = all_gather ? was : becomes;
    std::vector<Layout> route = all_gather ? std::vector<Layout>{from, with(s, s), with(Sbp::B(), s), done, to}
                                           : std::vector<Layout>{from, both, with(Sbp::P(), s), with(s, s), to};
    if (!splits_evenly(logical.shape, wide, with(s, s).sbp) || !relabels(route) || !route_possible(logical, route)) return {};
    return route;
  }
  // The tensor split over all the level's devices where an axis divides; else each rank's sum
  // split over its devices and all-reduced across ranks whole; else each rank's sum whole.
  for (size_t a = 0; a < logical.shape.size(); ++a) {
    const Sbp s = Sbp::S(int64_t(a));
    if (!splits_evenly(logical.shape, wide, with(s, s).sbp)) continue;
    std::vector<Layout> route{from, both, with(Sbp::P(), s), with(s, s), with(Sbp::B(), s), done, to};
    if (route_possible(logical, route)) return route;
  }
  for (size_t a = 0; a < logical.shape.size(); ++a) {
    const Sbp s = Sbp::S(int64_t(a));
    if (!splits_evenly(logical.shape, wide, with(Sbp::P(), s).sbp)) continue;
    std::vector<Layout> route{from, both, with(Sbp::P(), s), with(Sbp::B(), s), done, to};
    if (route_possible(logical, route)) return route;
  }
  std::vector<Layout> route{from, both, with(Sbp::P(), Sbp::B()), done, to};
  return route_possible(logical, route) ? route : std::vector<Layout>{};
}

// An all-reduce along several adjacent levels at once (a gradient partial over dp across ranks
// and tp within each: (P, P) -> (B, B)) as one along the level they make together, by the tree
// over its ranks (tree_route): summed within each rank first, then across on 1/g of it, instead
// of point to point between every pair of devices.
std::vector<Layout> merged_route(const TensorDesc& logical, const Layout& from, const Layout& to,
                                 const std::vector<int32_t>& rank_of_device) {
  if (!(from.placement == to.placement)) return {};
  size_t first = from.sbp.size(), last = 0;
  for (size_t l = 0; l < from.sbp.size(); ++l) {
    if (from.sbp[l] == to.sbp[l]) continue;
    if (!from.sbp[l].is_partial() || to.sbp[l].kind != Sbp::Kind::broadcast) return {};
    first = std::min(first, l);
    last = l;
  }
  if (first >= last) return {};
  for (size_t l = first; l <= last; ++l)
    if (from.sbp[l] == to.sbp[l]) return {};
  Layout a{from.placement, {}}, b{from.placement, {}};
  a.placement.hierarchy.erase(a.placement.hierarchy.begin() + std::ptrdiff_t(first) + 1,
                              a.placement.hierarchy.begin() + std::ptrdiff_t(last) + 1);
  for (size_t l = first + 1; l <= last; ++l) a.placement.hierarchy[first] *= from.placement.hierarchy[l];
  b.placement = a.placement;
  for (size_t l = 0; l < from.sbp.size(); ++l) {
    if (l > first && l <= last) continue;
    a.sbp.push_back(l == first ? Sbp::P() : from.sbp[l]);
    b.sbp.push_back(l == first ? Sbp::B() : to.sbp[l]);
  }
  if (!same_data(logical, from, a) || !same_data(logical, b, to)) return {};
  // Over 2 ranks (or 3) the grouped sums would only change the bits of today's plans (a dp x tp
  // plan on 2x2 is ZeRO's bit for bit): only where the tree applies.
  std::vector<Layout> inner = rank_route(logical, a, b, rank_of_device, true);
  if (inner.empty()) return {};
  std::vector<Layout> route{from};
  route.insert(route.end(), inner.begin(), inner.end());
  route.push_back(to);
  return route_possible(logical, route) ? route : std::vector<Layout>{};
}

// A conversion of several levels at once, one level at a time where the partial sums' level goes
// by the tree across ranks (tree_route): a row-parallel layer's bias gradient, partial over dp
// across ranks and split over tp within each, (P, S(0)) -> (B, B), is all-reduced over dp while
// still split, then gathered within each rank, where point to point each device took a piece
// from every rank (a plan of R ranks grew with R^2). Reductions go first (nothing is gathered
// partial), then the other levels, outer first. Empty unless a hop takes the tree.
std::vector<Layout> level_by_level(const TensorDesc& logical, const Layout& from, const Layout& to,
                                   const std::vector<int32_t>& rank_of_device) {
  if (!(from.placement == to.placement)) return {};
  std::vector<size_t> levels;
  for (size_t l = 0; l < from.sbp.size(); ++l)
    if (from.sbp[l].is_partial() && !(from.sbp[l] == to.sbp[l])) levels.push_back(l);
  for (size_t l = 0; l < from.sbp.size(); ++l)
    if (!from.sbp[l].is_partial() && !(from.sbp[l] == to.sbp[l])) levels.push_back(l);
  if (levels.size() < 2) return {};
  std::vector<Layout> route{from};
  bool tree = false;
  for (size_t l : levels) {
    Layout next = route.back();
    next.sbp[l] = to.sbp[l];
    std::vector<Layout> hop = rank_route(logical, route.back(), next, rank_of_device, true);
    tree = tree || !hop.empty();
    if (hop.empty()) hop = {route.back(), next};
    route.insert(route.end(), hop.begin() + 1, hop.end());
  }
  return tree && route_possible(logical, route) ? route : std::vector<Layout>{};
}

}  // namespace

std::vector<Layout> boxing_route(const TensorDesc& logical, const Layout& from, const Layout& to,
                                 const std::vector<int32_t>* rank_of_device) {
  if (rank_of_device) {
    std::vector<Layout> route = rank_route(logical, from, to, *rank_of_device);
    if (route.empty()) route = merged_route(logical, from, to, *rank_of_device);
    if (route.empty()) route = level_by_level(logical, from, to, *rank_of_device);
    if (!route.empty()) return route;
  }
  std::vector<Layout> route{from};
  if (from.placement == to.placement && !has_partial(to.sbp)) {
    Layout mid = from;
    bool changed = false;
    for (size_t l = 0; l < from.sbp.size(); ++l) {
      if (!from.sbp[l].is_partial() || to.sbp[l].kind != Sbp::Kind::broadcast || from.placement.hierarchy[l] <= 2) continue;
      for (size_t a = 0; a < logical.shape.size(); ++a) {
        Layout trial = mid;
        trial.sbp[l] = Sbp::S(int64_t(a));
        if (!splits_evenly(logical.shape, trial.placement, trial.sbp)) continue;
        mid = trial;
        changed = true;
        break;
      }
    }
    if (changed) route.push_back(mid);
  }
  route.push_back(to);
  // A partial sum that no hop above can bring into the target in one piece (a (P, P) gradient
  // whose weight lives as (B, S(0))): sum it whole first, then cut the target from the whole.
  if (has_partial(from.sbp) && from.placement == to.placement && !has_partial(to.sbp) && !route_possible(logical, route)) {
    Layout whole = from;
    for (Sbp& s : whole.sbp) s = Sbp::B();
    std::vector<Layout> via_whole{from, whole};
    if (!(whole == to)) via_whole.push_back(to);
    if (route_possible(logical, via_whole)) return via_whole;
  }
  return route;
}

RouteCost route_cost(const TensorDesc& logical, const Layout& from, const Layout& to, const std::vector<int32_t>* rank_of_device) {
  const std::vector<Layout> route = boxing_route(logical, from, to, rank_of_device);
  RouteCost cost;
  for (size_t k = 0; k + 1 < route.size() && cost.possible; ++k) {
    const BoxingPlan plan = plan_hop(logical, route, k);
    cost.possible = plan.possible;
    cost.bytes += plan.bytes_moved;
  }
  return cost;
}

std::string boxing_kind(const Layout& from, const Layout& to) {
  if (!(from.placement == to.placement)) return "copy";
  bool p = false, s_from = false, s_to = false, b_to = false;
  for (size_t l = 0; l < from.sbp.size(); ++l) {
    if (from.sbp[l] == to.sbp[l]) continue;
    p = p || from.sbp[l].is_partial();
    s_from = s_from || from.sbp[l].is_split();
    s_to = s_to || to.sbp[l].is_split();
    b_to = b_to || to.sbp[l].kind == Sbp::Kind::broadcast;
  }
  if (p) return s_to ? "reduce-scatter" : "all-reduce";
  if (s_from && s_to) return "all-to-all";
  if (s_from && b_to) return "all-gather";
  if (s_to) return "slice";
  return "boxing";
}

ValueId add_device_node(Graph& g, std::string name, std::string op, std::string kernel, Attrs attrs,
                        std::vector<ValueId> inputs, TensorDesc desc, int32_t device) {
  const ValueId out = append_node(g, std::move(name), std::move(op), std::move(kernel), std::move(attrs), std::move(inputs), std::move(desc));
  g.nodes.back().device = device;
  return out;
}

std::vector<ValueId> lower_boxing(Graph& g, const BoxingPlan& plan, const TensorDesc& logical, const Layout& from,
                                  const Layout& to, const std::vector<ValueId>& src, const std::string& name,
                                  const std::vector<int32_t>* rank_of_device) {
  OF_ASSERT(plan.possible, "lowering an impossible boxing of " + name);
  std::vector<ValueId> out;
  int counter = 0;
  const Namer fresh = [&](const char* what, int32_t device) { return fmt::format("{}/{}{}@{}", name, what, counter++, device); };
  const std::string op = collective_op(boxing_kind(from, to));
  for (size_t j = 0; j < to.placement.size(); ++j) {
    const int32_t device = to.placement.devices[j];
    const Region want = local_region(logical.shape, to.placement, to.sbp, j);
    if (rank_of_device) {
      const ValueId part = lower_part(g, plan.pieces[j], logical, from, want, device, src, *rank_of_device, op, name, fresh);
      if (part != kNoValue) {
        out.push_back(part);
        continue;
      }
    }
    std::vector<ValueId> summands;
    for (const std::vector<BoxingPiece>& pieces : plan.pieces[j]) {
      // Each piece: cut from its source (on the source device), then moved here.
      std::vector<std::pair<Region, ValueId>> parts;
      for (const BoxingPiece& p : pieces)
        parts.emplace_back(p.region, move_piece(g, src[p.src], local_region(logical.shape, from.placement, from.sbp, p.src), p.region,
                                                from.placement.devices[p.src], device, logical.dtype, fresh));
      // The pieces tile `want` as a grid: concatenate along the first axis where they differ,
      // each slab first (recursively) along the later axes.
      auto assemble = [&](auto&& self, std::vector<std::pair<Region, ValueId>> ps) -> std::pair<Region, ValueId> {
        if (ps.size() == 1) return ps[0];
        size_t axis = 0;
        while (std::all_of(ps.begin(), ps.end(), [&](const auto& p) { return p.first.begin[axis] == ps[0].first.begin[axis]; })) ++axis;
        std::map<int64_t, std::vector<std::pair<Region, ValueId>>> slabs;
        for (auto& p : ps) slabs[p.first.begin[axis]].push_back(std::move(p));
        std::vector<ValueId> inputs;
        Region whole;
        for (auto& [begin, slab] : slabs) {
          auto [r, v] = self(self, std::move(slab));
          if (inputs.empty()) {
            whole = r;
          } else {
            whole.size[axis] += r.size[axis];
          }
          inputs.push_back(v);
        }
        Attrs attrs;
        attrs.set_int("axis", int64_t(axis));
        return {whole, add_device_node(g, fresh("concat", device), "Concat", "concat", std::move(attrs), inputs,
                                       TensorDesc{whole.size, logical.dtype}, device)};
      };
      OF_ASSERT(!parts.empty(), "boxing found no source for a region of " + name);
      summands.push_back(assemble(assemble, std::move(parts)).second);
    }
    ValueId sum = summands[0];
    for (size_t k = 1; k < summands.size(); ++k)
      sum = add_device_node(g, fresh("add", device), "Add", "add", {}, {sum, summands[k]}, TensorDesc{want.size, logical.dtype}, device);
    out.push_back(sum);
  }
  return out;
}

}  // namespace of::compiler
