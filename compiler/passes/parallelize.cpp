// SPDX-License-Identifier: Apache-2.0
// parallelize (with --devices N and --dp/--tp/--pp): afterwards c.graph is the physical graph,
// one node per (op, device) plus boxing nodes, every value a box of a logical tensor with its
// local shape, and c.logical the graph as it was.
//
// 1. Placement: pipeline stages are contiguous runs of forward ops balanced by estimated work;
//    a backward op joins its forward op's stage, an update its weight's. A stage's devices form
//    a hierarchy [dp, tp] (levels of size 1 dropped).
// 2. SBP: ops are visited in order; each takes, among the products of its per-level signatures
//    (compiler/parallel/signatures.h), the one of least estimated time: the bytes boxing must
//    move to give its inputs the SBP it needs (compiler/parallel/boxing.h) plus its compute over
//    the devices that share it. A weight takes the SBP its first reader picks; a broadcast weight
//    on a level where the work is split will need its gradient all-reduced, which is charged
//    now. The dp level is data parallel by the user's word: there weights stay B and the data
//    arrives split by rows; the tp level is left to the costs, and the Megatron pattern (column
//    then row split, one reduction) is what they pick. With --zero 3 a trained weight's home is
//    split over the dp level instead (zero_home): its readers still take it B there, gathered
//    from the shards (an all-gather per piece), and its update then takes the shard, so the
//    gradient is reduce-scattered rather than all-reduced and the optimizer state is a shard too.
//    --zero 1 and 2 split the home alike (the update, its gradient and its state are the same
//    shards), but the weight itself is a replica: per device a persistent copy, whole over the
//    dp level, that each step refreshes once (refresh_replicas: the update reads its shard as a
//    slice of its device's replica, once per step, and streams the new shard on; the gather's
//    collective part writes the shards into the replica in place, or an assign copies them in
//    where the gather ends otherwise), not a gather per piece. So a device holds the weight once,
//    as plain dp does, and a shard of its optimizer state. Choosing a reader's signature still
//    costs the weight as read from its shard. --zero 2 also accumulates micro-batches' gradients
//    on the shard (a reduce-scatter per piece), --zero 1 sums them whole and reduce-scatters once
//    per step.
// 3. Physical graph: per device a copy of each op with its local shapes; where a producer's
//    layout differs from what a consumer needs, the boxing nodes in between.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/ranges.h>

#include "common/box_copy.h"
#include "common/error.h"
#include "compiler/parallel/boxing.h"
#include "compiler/parallel/cost_model.h"
#include "compiler/parallel/gradient_bucket.h"
#include "compiler/parallel/parallel_config.h"
#include "compiler/parallel/signatures.h"
#include "compiler/parallel/stages.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/training_kernels.h"

namespace of::compiler {
namespace {

std::string layout_key(const Layout& l) {
  return fmt::format("{} {} {}", fmt::join(l.placement.devices, ","), fmt::join(l.placement.hierarchy, ","), sbp_str(l.sbp));
}

struct Level {
  int64_t size;
  bool data_parallel;
};

class Parallelizer {
 public:
  Parallelizer(Compilation& c) : c_(c), g_(c.logical), o_(c.options) {}
  void run();

 private:
  void place();
  void choose(NodeId n);
  std::vector<ValueId> need(ValueId v, const Layout& want, const std::string& consumer, bool backward, bool to_update = false);
  // The boxing of `values`, logical v laid out as `from`, into `want`: its nodes (one slot each
  // with `once_per_step`: they carry a step's gradient or weights, not a piece) named after
  // `prefix`, and its line in the plan's boxing list.
  std::vector<ValueId> box(ValueId v, const Layout& from, std::vector<ValueId> values, const Layout& want, const std::string& consumer,
                           bool backward, bool once_per_step, const std::string& prefix);
  // The same for a tensor of `desc` named `tensor`, a box of logical value `logical` (or none).
  std::vector<ValueId> box_tensor(const TensorDesc& desc, const std::string& tensor, ValueId logical, const Layout& from,
                                  std::vector<ValueId> values, const Layout& want, const std::string& consumer, bool backward,
                                  bool once_per_step, const std::string& prefix);
  // Logical node `id`'s copy on each device of its stage, its inputs boxed as it chose; an
  // update that waited in a bucket reads `part` (its gradient's part of the bucket) instead.
  struct BucketPart {
    size_t input = 0;             // which input
    std::vector<ValueId> values;  // per device, 1-D
  };
  void materialise(NodeId id, const BucketPart* part);
  // Gradient buckets (ofc --bucket-mb; compiler/parallel/gradient_bucket.h): an optimizer update
  // whose gradient is all-reduced waits in the bucket of its layouts, with its dtype, until the
  // bucket holds the bytes asked for, or a node reads what a waiting update writes, or the graph
  // ends; then the bucket is reduced as one tensor and its updates follow.
  struct Bucket {
    Layout from, want;
    DType dtype = DType::f32;
    std::vector<NodeId> updates;  // in node order
    int64_t elements = 0;
  };
  bool join_bucket(NodeId id);
  void flush_bucket(size_t k);
  void flush_buckets();
  // --zero 1/2: weight v's home is split over the dp level and its readers read a replica.
  bool read_from_replica(ValueId v) const;
  struct Replica {
    ValueId weight;
    Layout layout;                // the home, whole over the dp level
    std::vector<ValueId> values;  // per device of `layout`
  };
  const Replica& replica(ValueId v);
  // After every node: each replica's refresh (see the top of this file).
  void refresh_replicas();
  std::vector<ValueId> shards(ValueId v);
  // The physical values of a constant laid out as `at` (not its home), made fresh.
  std::vector<ValueId> shards_at(ValueId v, const Layout& at);
  // A constant no node changes: any device may hold its own copy, made at compile time.
  bool immutable(ValueId v) const;
  Layout input_hint(ValueId v, const Placement& p) const;
  // Where graph input v is read from the data: one source per group of devices that reads it.
  Layout input_home(ValueId v, const std::vector<int32_t>& group_of_device) const;
  bool trainable(ValueId v) const { return std::count(weights_.begin(), weights_.end(), v) > 0; }
  // A weight, or computed from weights alone by a deferred node (an nn.Linear weight's Transpose):
  // its consumers choose its layout as they choose a weight's.
  bool weight_like(ValueId v) const {
    const NodeId p = g_.values[size_t(v)].producer;
    return trainable(v) || (p >= 0 && deferred_[size_t(p)]);
  }
  void find_deferred();
  // Whether a backward or update node reads an output of forward node `id` (an activation kept
  // for the backward pass, which pipelining must hold for the micro-batches in flight).
  bool read_by_backward(NodeId id) const;
  // choose(n), then at once the deferred producers of what n reads (and theirs): so that a
  // weight's layout is fixed by its first reader, before the backward pass and the update weigh it.
  void choose_then_deferred(NodeId n);
  // --zero 3: the home of trained weight v whose first reader takes it as `read`: split over the
  // data-parallel level along an axis no other level splits (so that gathering it stays inside
  // each group of the other levels), else any axis that divides; else `read` itself.
  Layout zero_home(ValueId v, const Layout& read);

  Compilation& c_;
  Graph& g_;
  const CompileOptions& o_;
  ParallelConfig config_;
  Graph phys_;
  std::vector<Level> levels_;
  std::vector<Placement> stages_;
  std::vector<int32_t> stage_of_;                  // per logical node
  std::vector<std::optional<Layout>> home_;        // per logical value
  std::vector<std::vector<Signature>> chosen_;     // per logical node: one signature per level
  std::vector<std::vector<ValueId>> phys_of_;      // per logical value, per device of its home
  // route_cost by (tensor, from, to): the choice asks the same conversions of every layer's
  // weights and of every candidate signature, and over many devices a route costs O(devices^2).
  RouteCost cached_route_cost(const TensorDesc& desc, const Layout& from, const Layout& to);
  std::unordered_map<std::string, RouteCost> route_costs_;
  std::map<std::pair<ValueId, std::string>, std::vector<ValueId>> boxed_;
  std::set<std::pair<ValueId, std::string>> wanted_;  // layouts chosen consumers need (boxed once)
  std::map<ValueId, std::vector<Layout>> wants_;       // the same, per value, for deferred producers
  // Per logical node: a forward op reading only weights (and constants), chosen after the ops that
  // read its outputs, so that it makes the layout they want (greedy in op order, a weight's
  // Transpose would fix its matmul's layout before the matmul could weigh it).
  std::vector<bool> deferred_;
  std::vector<ValueId> weights_;
  std::vector<int32_t> rank_of_device_;  // per device (lower_to_tasks places ranks alike)
  std::vector<Replica> replicas_;
  std::map<ValueId, size_t> replica_of_;  // weight -> index into replicas_
  size_t dp_level_ = SIZE_MAX;            // the data-parallel level, if any
  std::vector<Bucket> buckets_;           // waiting, oldest first
  std::set<ValueId> awaited_;             // what the waiting updates write (their outputs, the inputs they own)
  int32_t buckets_made_ = 0;
  std::set<std::string> flushed_on_;      // layout keys of gradients whose first bucket is full
};

void Parallelizer::choose_then_deferred(NodeId n) {
  choose(n);
  for (ValueId v : g_.nodes[size_t(n)].runtime_inputs) {
    const NodeId p = g_.values[size_t(v)].producer;
    if (p >= 0 && deferred_[size_t(p)] && chosen_[size_t(p)].empty()) choose_then_deferred(p);
  }
}

void Parallelizer::find_deferred() {
  deferred_.assign(g_.nodes.size(), false);
  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    const Node& node = g_.nodes[n];
    if (node.forward >= 0 || !node.inplace.empty() || node.runtime_inputs.empty()) continue;
    bool reads_weight = false, only_weights = true;
    for (ValueId v : node.runtime_inputs) {
      const bool w = weight_like(v);
      reads_weight = reads_weight || w;
      only_weights = only_weights && (w || immutable(v));
    }
    deferred_[n] = reads_weight && only_weights;
  }
}

void Parallelizer::place() {
  const int32_t per_stage = o_.dp * o_.tp;
  if (o_.dp > 1) levels_.push_back({o_.dp, true});
  if (o_.tp > 1) levels_.push_back({o_.tp, false});
  if (levels_.empty()) levels_.push_back({1, false});
  if (!o_.parallel_config.empty()) config_ = read_parallel_config(o_.parallel_config, levels_.size());
  const std::string& file = o_.parallel_config;
  for (const auto& [name, sbp] : config_.sbp) {
    const std::string& tensor = name;  // a plain reference: lambdas may not capture bindings (clang 14)
    if (std::none_of(g_.values.begin(), g_.values.end(), [&](const Value& v) { return v.name == tensor; }))
      fail({.file = file, .field = "sbp." + tensor}, "the model has no tensor of that name");
  }
  std::vector<NodeId> starts;
  for (const std::string& s : config_.stage_starts) {
    auto it = std::find_if(g_.nodes.begin(), g_.nodes.end(), [&](const Node& n) { return n.name == s; });
    if (it == g_.nodes.end() || it->forward >= 0 || !it->inplace.empty())
      fail({.file = file, .field = "stages"}, "'{}' is not a forward op of the model", s);
    starts.push_back(NodeId(it - g_.nodes.begin()));
    if (starts.size() > 1 && starts.back() <= starts[starts.size() - 2])
      fail({.file = file, .field = "stages"}, "'{}' does not come after the op before it in the list", s);
  }
  if (!starts.empty() && int32_t(starts.size()) != o_.pp - 1)
    fail({.file = file, .field = "stages"}, "{} boundaries for {} stages; give {}", starts.size(), o_.pp, o_.pp - 1);
  for (int32_t s = 0; s < o_.pp; ++s) {
    Placement p;
    for (int32_t d = 0; d < per_stage; ++d) p.devices.push_back(s * per_stage + d);
    for (const Level& l : levels_) p.hierarchy.push_back(l.size);
    stages_.push_back(std::move(p));
  }
  stage_of_ = pipeline_stages(g_, o_.pp, starts);
  std::vector<int32_t> ops_in(size_t(o_.pp), 0);
  for (size_t n = 0; n < g_.nodes.size(); ++n)
    if (g_.nodes[n].forward < 0 && g_.nodes[n].inplace.empty()) ++ops_in[size_t(stage_of_[n])];
  for (int32_t s = 0; s < o_.pp; ++s)
    if (ops_in[size_t(s)] == 0)
      fail({.file = file, .field = file.empty() ? "--pp" : "stages"}, "pipeline stage {} of {} would hold no forward op", s, o_.pp);
}

// Whether each device's box of a tensor laid out as `part` lies inside its box laid out as `whole`.
bool shards_inside(const Shape& shape, const Layout& part, const Layout& whole) {
  for (size_t j = 0; j < part.placement.size(); ++j) {
    const Region p = local_region(shape, part.placement, part.sbp, j), w = local_region(shape, whole.placement, whole.sbp, j);
    for (size_t a = 0; a < shape.size(); ++a)
      if (p.begin[a] < w.begin[a] || p.begin[a] + p.size[a] > w.begin[a] + w.size[a]) return false;
  }
  return true;
}

Layout Parallelizer::zero_home(ValueId v, const Layout& read) {
  const Shape& shape = g_.values[size_t(v)].desc.shape;
  size_t dp = levels_.size();
  for (size_t l = 0; l < levels_.size(); ++l)
    if (levels_[l].data_parallel) dp = l;
  OF_ASSERT(dp < levels_.size() && read.sbp[dp].kind == Sbp::Kind::broadcast, "--zero 3 without a broadcast dp level: " + g_.values[size_t(v)].name);
  for (const bool other_levels_may_split : {false, true})
    for (size_t a = 0; a < shape.size(); ++a) {
      if (shape[a] <= 1) continue;
      const bool split_elsewhere = std::any_of(read.sbp.begin(), read.sbp.end(), [&](const Sbp& s) { return s.kind == Sbp::Kind::split && s.axis == int64_t(a); });
      if (split_elsewhere && !other_levels_may_split) continue;
      Layout home = read;
      home.sbp[dp] = Sbp::S(int64_t(a));
      if (!splits_evenly(shape, home.placement, home.sbp)) continue;
      // Stages 1 and 2 update each shard as a slice of its device's replica (`read`, whole over
      // dp): it must lie inside it, which a split of the same axis at an inner level breaks.
      if (o_.zero != 3 && !shards_inside(shape, home, read)) continue;
      ++c_.parallel.zero_sharded;
      return home;
    }
  ++c_.parallel.zero_replicated;
  return read;
}

RouteCost Parallelizer::cached_route_cost(const TensorDesc& desc, const Layout& from, const Layout& to) {
  std::string key = fmt::format("{} {} {}|{}", fmt::join(desc.shape, ","), int(desc.dtype), layout_key(from), layout_key(to));
  const auto it = route_costs_.find(key);
  if (it != route_costs_.end()) return it->second;
  const RouteCost cost = route_cost(desc, from, to, &rank_of_device_);
  route_costs_.emplace(std::move(key), cost);
  return cost;
}

// A graph input arrives from its sources (input_home, settled after every choice); for costing, it
// is as if it came split by rows over the data-parallel level, which is what every choice there
// starts from.
Layout Parallelizer::input_hint(ValueId v, const Placement& p) const {
  const Shape& s = g_.values[size_t(v)].desc.shape;
  NdSbp sbp;
  for (size_t l = 0; l < levels_.size(); ++l)
    sbp.push_back(levels_[l].data_parallel && !s.empty() && s[0] % levels_[l].size == 0 ? Sbp::S(0) : Sbp::B());
  return Layout{p, sbp};
}

// A plan of several ranks reads its data on every rank that consumes it: each rank's source reads
// the rows its own devices need, so rank 0 ships no batches. A data-parallel plan of one rank does
// the same per device: each device's source reads its own rows, so no device slices and copies
// the batch for the others, and every device runs the same tasks (the plan file stores them once:
// schemas/plan_copies.h). `group_of_device` says which: the rank, or the device itself.
//
// The home is the first device of every group whose devices want v, in group order. When each of
// those groups' devices read only rows of that group's even share (data-parallel devices numbered
// group by group), v is split by rows over them; otherwise (a step's scalars, a batch
// tensor-parallel ranks all read whole) every one of them reads it whole, which costs a read and
// no transfer. Boxing brings each device its box from there, as from any other layout.
Layout Parallelizer::input_home(ValueId v, const std::vector<int32_t>& group_of_device) const {
  std::vector<int32_t> first_of_group;  // per group: its lowest device that reads v, or -1
  const auto it = wants_.find(v);
  const std::vector<Layout> none;
  const std::vector<Layout>& wanted = it == wants_.end() ? none : it->second;
  for (const Layout& l : wanted)
    for (int32_t d : l.placement.devices) {
      const auto r = size_t(group_of_device[size_t(d)]);
      if (first_of_group.size() <= r) first_of_group.resize(r + 1, -1);
      if (first_of_group[r] < 0 || d < first_of_group[r]) first_of_group[r] = d;
    }
  std::vector<int32_t> devices, share_of_group(first_of_group.size(), -1);
  for (size_t r = 0; r < first_of_group.size(); ++r)
    if (first_of_group[r] >= 0) {
      share_of_group[r] = int32_t(devices.size());
      devices.push_back(first_of_group[r]);
    }
  if (devices.empty()) devices.push_back(0);  // read by no runtime task: the lead source keeps it
  const Shape& s = g_.values[size_t(v)].desc.shape;
  const auto n = int64_t(devices.size());
  bool split = n > 1 && !s.empty() && s[0] % n == 0;
  for (const Layout& l : wanted)
    for (size_t j = 0; split && j < l.placement.size(); ++j) {
      const Region box = local_region(s, l.placement, l.sbp, j);
      const int64_t share = s[0] / n, first = share * share_of_group[size_t(group_of_device[size_t(l.placement.devices[j])])];
      split = box.begin[0] >= first && box.begin[0] + box.size[0] <= first + share;
    }
  return Layout{Placement{devices, {n}}, NdSbp{split ? Sbp::S(0) : Sbp::B()}};
}

void Parallelizer::choose(NodeId id) {
  const Node& n = g_.nodes[size_t(id)];
  if (n.recompute_of >= 0) {  // a recompute clone computes what its original did, laid out alike
    chosen_[size_t(id)] = chosen_[size_t(n.recompute_of)];
    OF_ASSERT(!chosen_[size_t(id)].empty(), "a recompute clone before its original: " + n.name);
    const Node& original = g_.nodes[size_t(n.recompute_of)];
    for (size_t o = 0; o < n.outputs.size(); ++o) home_[size_t(n.outputs[o])] = home_[size_t(original.outputs[o])];
    return;
  }
  const Placement& p = stages_[size_t(stage_of_[size_t(id)])];
  const std::vector<Signature> sigs = signatures_of(g_, n);
  // Candidates are products of one signature per level.
  std::vector<size_t> pick(levels_.size(), 0);
  double best = -1;
  std::vector<Signature> best_sigs;
  const double flops = flops_of(g_, n);
  // --zero 2: a weight's gradients are summed over the micro-batches on its shard (a
  // reduce-scatter per piece), so no device holds a whole accumulator.
  std::optional<Sbp> sum_on = std::nullopt;
  if (o_.zero == 2 && n.kernel == "accumulate" && dp_level_ < levels_.size())
    for (NodeId c : g_.values[size_t(n.outputs[0])].consumers) {
      const Node& update = g_.nodes[size_t(c)];
      if (update.inplace.empty() || !home_[size_t(update.inputs[0])] || !(home_[size_t(update.inputs[0])]->placement == p)) continue;
      if (read_from_replica(update.inputs[0])) sum_on = home_[size_t(update.inputs[0])]->sbp[dp_level_];
    }
  for (;;) {
    std::vector<NdSbp> ins(n.inputs.size()), outs(n.outputs.size());
    double parts = 1;
    bool ok = true;
    bool trivial = false;  // a level of one device splits nothing: only B is meaningful there
    for (size_t l = 0; l < levels_.size(); ++l) trivial = trivial || (levels_[l].size == 1 && pick[l] + 1 != sigs.size());
    bool misplaced = false;  // a data-parallel-only signature on another level, or the reverse
    for (size_t l = 0; l < levels_.size(); ++l) {
      const bool dp = levels_[l].data_parallel;
      misplaced = misplaced || (sigs[pick[l]].data_parallel_only && !dp) ||
                  (sigs[pick[l]].never_data_parallel && dp && levels_[l].size > 1);
    }
    for (size_t l = 0; l < levels_.size(); ++l) {
      const Signature& s = sigs[pick[l]];
      for (size_t i = 0; i < ins.size(); ++i) ins[i].push_back(s.in[i]);
      for (size_t o = 0; o < outs.size(); ++o) outs[o].push_back(s.out[o]);
      if (s.splits_work) parts *= double(levels_[l].size);
    }
    double cost = flops / parts * kSecondsPerFlop;
    ok = !trivial && !misplaced && (!sum_on || outs[0][dp_level_] == *sum_on);
    for (size_t i = 0; i < ins.size() && ok; ++i) {
      const ValueId v = n.inputs[i];
      if (v == kNoValue) continue;
      const Value& val = g_.values[size_t(v)];
      const bool runtime = std::count(n.runtime_inputs.begin(), n.runtime_inputs.end(), v) > 0;
      if (!runtime) continue;
      ok = splits_evenly(val.desc.shape, p, ins[i]);
      if (!ok) break;
      const bool own = std::count(n.inplace.begin(), n.inplace.end(), int32_t(i)) > 0;
      if (!home_[size_t(v)]) {
        // A constant not placed yet takes this layout. Weights stay B over data parallelism.
        const bool weight = weight_like(v);
        for (size_t l = 0; l < levels_.size() && ok; ++l) {
          if (!weight || ins[i][l].kind != Sbp::Kind::broadcast) {
            ok = !(weight && levels_[l].data_parallel) && !ins[i][l].is_partial();
            continue;
          }
          if (sigs[pick[l]].splits_work)
            cost += 2.0 * double(val.desc.bytes()) * double(levels_[l].size - 1) / double(levels_[l].size) * kSecondsPerByte;
        }
        continue;
      }
      const Layout want{p, ins[i]};
      if (own) {
        ok = *home_[size_t(v)] == want;  // an update writes its weight where it lives
        continue;
      }
      if (wanted_.count({v, layout_key(want)})) continue;  // an earlier consumer already pays for it
      const Layout from = val.graph_input ? input_hint(v, p) : *home_[size_t(v)];
      const RouteCost route = cached_route_cost(val.desc, from, want);
      ok = route.possible;
      cost += double(route.bytes) * kSecondsPerByte;
      // Re-laying out a weight is not streamed work: it is done once per read, so steer away.
      if (val.data && !(from == want)) cost += double(val.desc.bytes()) * kSecondsPerByte * 4;
    }
    for (size_t o = 0; o < outs.size() && ok; ++o) ok = splits_evenly(g_.values[size_t(n.outputs[o])].desc.shape, p, outs[o]);
    // A deferred node: what its (already chosen) readers want of its outputs, moved once.
    for (size_t o = 0; o < outs.size() && ok && deferred_[size_t(id)]; ++o) {
      auto w = wants_.find(n.outputs[o]);
      if (w == wants_.end()) continue;
      for (const Layout& want : w->second)
        if (!(want == Layout{p, outs[o]})) {
          const RouteCost route = cached_route_cost(g_.values[size_t(n.outputs[o])].desc, Layout{p, outs[o]}, want);
          cost += route.possible ? double(route.bytes) * kSecondsPerByte : 1e30;
        }
    }
    // The user's hints win: on what this op makes, and on weights it is the first to read.
    for (size_t o = 0; o < outs.size() && ok; ++o) {
      auto hint = config_.sbp.find(g_.values[size_t(n.outputs[o])].name);
      ok = hint == config_.sbp.end() || hint->second == outs[o];
    }
    for (size_t i = 0; i < ins.size() && ok; ++i) {
      if (n.inputs[i] == kNoValue || home_[size_t(n.inputs[i])]) continue;
      auto hint = config_.sbp.find(g_.values[size_t(n.inputs[i])].name);
      ok = hint == config_.sbp.end() || hint->second == ins[i];
    }
    if (ok && (best < 0 || cost < best)) {
      best = cost;
      best_sigs.clear();
      for (size_t l = 0; l < levels_.size(); ++l) best_sigs.push_back(sigs[pick[l]]);
    }
    size_t l = 0;
    while (l < pick.size() && ++pick[l] == sigs.size()) pick[l++] = 0;
    if (l == pick.size()) break;
  }
  if (best_sigs.empty()) {  // all-B always fits, so a hint excluded everything
    for (ValueId v : n.outputs)
      if (config_.sbp.count(g_.values[size_t(v)].name))
        fail({.file = o_.parallel_config, .field = "sbp." + g_.values[size_t(v)].name}, "no signature of '{}' ({}) gives it {}", n.name,
             n.op_type, sbp_str(config_.sbp.at(g_.values[size_t(v)].name)));
    for (ValueId v : n.inputs)
      if (v != kNoValue && config_.sbp.count(g_.values[size_t(v)].name))
        fail({.file = o_.parallel_config, .field = "sbp." + g_.values[size_t(v)].name}, "no signature of '{}' ({}) reads it as {}", n.name,
             n.op_type, sbp_str(config_.sbp.at(g_.values[size_t(v)].name)));
    OF_ASSERT(false, "no signature fits node " + n.name);
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v == kNoValue || home_[size_t(v)] || g_.values[size_t(v)].graph_input) continue;
    if (std::count(n.runtime_inputs.begin(), n.runtime_inputs.end(), v) == 0) continue;
    const NodeId producer = g_.values[size_t(v)].producer;
    if (producer >= 0 && deferred_[size_t(producer)]) continue;  // its producer makes it, later
    NdSbp sbp;
    for (const Signature& s : best_sigs) sbp.push_back(s.in[i]);
    home_[size_t(v)] = o_.zero > 0 && trainable(v) ? zero_home(v, Layout{p, sbp}) : Layout{p, sbp};
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    NdSbp sbp;
    for (const Signature& s : best_sigs) sbp.push_back(s.in[i]);
    if (wanted_.insert({n.inputs[i], layout_key(Layout{p, sbp})}).second) wants_[n.inputs[i]].push_back(Layout{p, sbp});
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    NdSbp sbp;
    for (const Signature& s : best_sigs) sbp.push_back(s.out[o]);
    home_[size_t(n.outputs[o])] = Layout{p, sbp};
  }
  chosen_[size_t(id)] = best_sigs;
}

// The physical values of a constant or graph input, made on first use.
std::vector<ValueId> Parallelizer::shards(ValueId v) {
  std::vector<ValueId>& out = phys_of_[size_t(v)];
  if (!out.empty()) return out;
  out = shards_at(v, *home_[size_t(v)]);
  return out;
}

bool Parallelizer::immutable(ValueId v) const {
  const Value& val = g_.values[size_t(v)];
  if (!val.data || val.graph_input || trainable(v)) return false;
  for (NodeId c : val.consumers) {
    const Node& n = g_.nodes[size_t(c)];
    for (int32_t k : n.inplace)
      if (n.inputs[size_t(k)] == v) return false;
  }
  return true;
}

std::vector<ValueId> Parallelizer::shards_at(ValueId v, const Layout& h) {
  std::vector<ValueId> out;
  const Value& val = g_.values[size_t(v)];
  for (size_t j = 0; j < h.placement.size(); ++j) {
    const Region r = local_region(val.desc.shape, h.placement, h.sbp, j);
    const ValueId pv = phys_.add_value(val.name);
    Value& x = phys_.values[size_t(pv)];
    x.desc = TensorDesc{r.size, val.desc.dtype};
    x.known = true;
    x.graph_input = val.graph_input;
    x.logical = v;
    x.shard_begin = r.begin;
    // A box of a constant or stored tensor holds no bytes: the weights file stores the logical
    // tensor once and each device loads its box (one copy of the model in ofc, not one per device).
    if (val.data) x.data = std::vector<uint8_t>();
    if (val.graph_input) {
      x.input_device = h.placement.devices[j];
      phys_.inputs.push_back(pv);
    }
    out.push_back(pv);
  }
  return out;
}

std::vector<ValueId> Parallelizer::need(ValueId v, const Layout& want, const std::string& consumer, bool backward, bool to_update) {
  Layout from = *home_[size_t(v)];
  const Replica* rep = nullptr;
  if (!to_update && read_from_replica(v)) {  // its update reads the shard; everyone else the replica
    rep = &replica(v);
    from = rep->layout;
  }
  if (from == want) return rep ? rep->values : phys_of_[size_t(v)].empty() ? shards(v) : phys_of_[size_t(v)];
  const std::string key = layout_key(want);
  auto it = boxed_.find({v, key});
  if (it != boxed_.end()) return it->second;
  // A constant (a folded mask) wanted elsewhere is written there at compile time: each device
  // holds its own copy, and no task reads another device's constant or moves it at run time.
  if (immutable(v)) return boxed_.emplace(std::make_pair(v, key), shards_at(v, want)).first->second;
  std::vector<ValueId> values = rep ? rep->values : phys_of_[size_t(v)].empty() ? shards(v) : phys_of_[size_t(v)];
  // Gradients on their way to an optimizer update come once per step and are consumed before the
  // next can exist (the next forward pass waits for the update): one slot each.
  std::vector<ValueId> out = box(v, from, std::move(values), want, consumer, backward, to_update, g_.values[size_t(v)].name + "/boxing");
  boxed_.emplace(std::make_pair(v, key), out);
  return out;
}

std::vector<ValueId> Parallelizer::box(ValueId v, const Layout& from, std::vector<ValueId> out, const Layout& want, const std::string& consumer,
                                       bool backward, bool once_per_step, const std::string& prefix) {
  const Value& val = g_.values[size_t(v)];
  return box_tensor(val.desc, val.name, v, from, std::move(out), want, consumer, backward, once_per_step, prefix);
}

std::vector<ValueId> Parallelizer::box_tensor(const TensorDesc& desc, const std::string& tensor, ValueId logical, const Layout& from,
                                              std::vector<ValueId> out, const Layout& want, const std::string& consumer, bool backward,
                                              bool once_per_step, const std::string& prefix) {
  const std::vector<Layout> route = boxing_route(desc, from, want, &rank_of_device_);
  const size_t first_node = phys_.nodes.size();
  uint64_t bytes = 0;
  for (size_t k = 0; k + 1 < route.size(); ++k) {
    const BoxingPlan plan = plan_hop(desc, route, k);
    if (!plan.possible)
      fail({.file = g_.source_file, .node = consumer}, "cannot make '{}' {} on {} from {} on {}", tensor, sbp_str(want.sbp),
           want.placement.str(), sbp_str(from.sbp), from.placement.str());
    out = lower_boxing(phys_, plan, desc, route[k], route[k + 1], out, k ? prefix + std::to_string(k) : prefix,
                       o_.collectives ? &rank_of_device_ : nullptr);
    for (size_t j = 0; j < out.size(); ++j) {
      phys_.values[size_t(out[j])].logical = logical;
      phys_.values[size_t(out[j])].shard_begin = local_region(desc.shape, route[k + 1].placement, route[k + 1].sbp, j).begin;
    }
    bytes += plan.bytes_moved;
  }
  if (once_per_step)
    for (size_t k = first_node; k < phys_.nodes.size(); ++k) phys_.nodes[k].slots = 1;
  c_.parallel.boxings.push_back(plan::Boxing{.tensor = tensor, .kind = boxing_kind(from, want),
                                           .from = from.placement.str() + " " + sbp_str(from.sbp),
                                           .to = want.placement.str() + " " + sbp_str(want.sbp), .consumer = consumer,
                                           .bytes = bytes, .backward = backward});
  return out;
}

bool Parallelizer::read_from_replica(ValueId v) const {
  if ((o_.zero != 1 && o_.zero != 2) || !trainable(v) || !home_[size_t(v)] || dp_level_ >= levels_.size()) return false;
  return home_[size_t(v)]->sbp[dp_level_].kind == Sbp::Kind::split;
}

const Parallelizer::Replica& Parallelizer::replica(ValueId v) {
  auto [it, fresh] = replica_of_.try_emplace(v, replicas_.size());
  if (!fresh) return replicas_[it->second];
  Layout whole = *home_[size_t(v)];
  whole.sbp[dp_level_] = Sbp::B();
  // Boxes of the stored weight: loaded from the weights file (or a checkpoint) like its shards.
  std::vector<ValueId> values = shards_at(v, whole);
  replicas_.push_back(Replica{v, whole, std::move(values)});
  return replicas_.back();
}

void Parallelizer::refresh_replicas() {
  // Which node writes each physical value in place: the weights' updates.
  std::map<ValueId, NodeId> updater;
  for (size_t n = 0; n < phys_.nodes.size(); ++n)
    for (int32_t k : phys_.nodes[n].inplace) updater[phys_.nodes[n].inputs[size_t(k)]] = NodeId(n);
  const auto before = NodeId(phys_.nodes.size());
  std::map<NodeId, std::vector<NodeId>> ahead;  // an update -> the slices it reads, placed right before it
  for (const Replica& r : replicas_) {
    const Value& val = g_.values[size_t(r.weight)];
    const Layout& home = *home_[size_t(r.weight)];
    OF_ASSERT(home.placement == r.layout.placement, "a replica placed apart from its shards: " + val.name);
    // The shard is the replica's slice, not a tensor of its own: each update reads its slice of
    // the device's replica, once per step, and streams its new shard on to be gathered.
    std::vector<ValueId> updated;
    for (size_t j = 0; j < home.placement.size(); ++j) {
      const ValueId shard = phys_of_[size_t(r.weight)][j];
      const auto u = updater.find(shard);
      OF_ASSERT(u != updater.end(), "a replicated weight without an update: " + val.name);
      const int32_t device = home.placement.devices[j];
      const Region have = local_region(val.desc.shape, r.layout.placement, r.layout.sbp, j);
      const Region want = local_region(val.desc.shape, home.placement, home.sbp, j);
      const ValueId grad = phys_.nodes[size_t(u->second)].inputs[1];
      const std::string at = home.placement.size() > 1 ? fmt::format("@{}", device) : "";
      const auto first = NodeId(phys_.nodes.size());
      const ValueId param = slice_region(phys_, r.values[j], have, want, device, val.desc.dtype,
                                         [&](size_t a) { return fmt::format("shard/{}/{}{}", val.name, a, at); });
      for (auto id = first; id < NodeId(phys_.nodes.size()); ++id) {
        // Paced by the gradient (once per step, and not before it is ready: the slice is short-lived).
        Node& slice = phys_.nodes[size_t(id)];
        slice.once_per_version = true;
        slice.slots = 1;  // once per step, as the update that reads it
        slice.control_inputs.push_back(grad);
        phys_.values[size_t(grad)].consumers.push_back(id);
        ahead[u->second].push_back(id);
      }
      OF_ASSERT(param != r.values[j], "a shard that is its whole replica: " + val.name);
      // The update: (slice, grad, state..., lr, step) -> (state'..., param'), the states in place.
      Node& x = phys_.nodes[size_t(u->second)];
      OF_ASSERT(!x.inplace.empty() && x.inplace[0] == 0 && x.inputs[0] == shard, "an update that does not own its weight: " + x.name);
      x.inputs[0] = param;
      std::replace(x.runtime_inputs.begin(), x.runtime_inputs.end(), shard, param);
      phys_.values[size_t(param)].consumers.push_back(u->second);
      auto& readers = phys_.values[size_t(shard)].consumers;
      readers.erase(std::remove(readers.begin(), readers.end(), u->second), readers.end());
      x.inplace.erase(x.inplace.begin());
      std::rotate(x.outputs.begin(), x.outputs.begin() + 1, x.outputs.begin() + std::ptrdiff_t(x.inplace.size()) + 1);
      x.kernel_attrs.set_int("param_last", 1);
      x.slots = 1;  // the new shard, once per step: the gather frees it before the next forward pass
      updated.push_back(x.outputs[x.inplace.size()]);
    }
    const std::string name = "refresh/" + val.name;
    const std::vector<ValueId> whole = box(r.weight, home, updated, r.layout, name, true, true, name);
    for (size_t j = 0; j < r.layout.placement.size(); ++j) {
      const int32_t device = r.layout.placement.devices[j];
      // A gather by one collective part per device writes the replica itself: the part takes it as
      // a last, in-place input its boxes never read, and writes every element of it.
      const NodeId part = phys_.values[size_t(whole[j])].producer;
      if (part >= 0 && phys_.nodes[size_t(part)].kernel == "collective_part" && phys_.nodes[size_t(part)].device == device &&
          phys_.nodes[size_t(part)].outputs.size() == 1 && phys_.values[size_t(whole[j])].consumers.empty()) {
        Node& x = phys_.nodes[size_t(part)];
        x.inputs.push_back(r.values[j]);
        x.runtime_inputs.push_back(r.values[j]);
        x.inplace = {int32_t(x.inputs.size() - 1)};
        phys_.values[size_t(r.values[j])].consumers.push_back(part);
        continue;
      }
      // Otherwise an assign copies the gathered weight in.
      const auto id = NodeId(phys_.nodes.size());
      Node assign{.name = r.layout.placement.size() > 1 ? fmt::format("{}@{}", name, device) : name, .op_type = "Assign",
                  .inputs = {r.values[j], whole[j]}, .kernel = "assign", .kernel_attrs = {}, .runtime_inputs = {r.values[j], whole[j]}};
      assign.device = device;
      assign.inplace = {0};
      const ValueId out = phys_.add_value(phys_.values[size_t(r.values[j])].name + "'");
      phys_.values[size_t(out)].desc = phys_.values[size_t(r.values[j])].desc;
      phys_.values[size_t(out)].known = true;
      phys_.values[size_t(out)].producer = id;
      assign.outputs = {out};
      for (ValueId v : assign.inputs) phys_.values[size_t(v)].consumers.push_back(id);
      phys_.nodes.push_back(std::move(assign));
    }
  }
  // Nodes stay in topological order: each slice right before its update, the gathers after all.
  std::vector<NodeId> order;
  std::set<NodeId> placed;
  for (NodeId n = 0; n < before; ++n) {
    for (NodeId a : ahead[n]) order.push_back(a), placed.insert(a);
    order.push_back(n);
  }
  for (auto n = before; n < NodeId(phys_.nodes.size()); ++n)
    if (!placed.count(n)) order.push_back(n);
  reorder_nodes(phys_, order);
}

bool Parallelizer::read_by_backward(NodeId id) const {
  for (ValueId v : g_.nodes[size_t(id)].outputs)
    for (NodeId c : g_.values[size_t(v)].consumers) {
      const Node& reader = g_.nodes[size_t(c)];
      if (reader.forward >= 0 || !reader.inplace.empty()) return true;
    }
  return false;
}

bool Parallelizer::join_bucket(NodeId id) {
  const Node& n = g_.nodes[size_t(id)];
  // An optimizer update's inputs: (weight, gradient, state..., lr, step) (add_optimizer.cpp).
  if (o_.bucket_bytes == 0 || !is_optimizer_update(n.op_type) || n.inputs.size() < 2) return false;
  const ValueId grad = n.inputs[1];
  if (grad == kNoValue || !home_[size_t(grad)] || chosen_[size_t(id)].empty() ||
      std::count(n.runtime_inputs.begin(), n.runtime_inputs.end(), grad) == 0)
    return false;
  const Placement& p = stages_[size_t(stage_of_[size_t(id)])];
  NdSbp sbp;
  for (const Signature& s : chosen_[size_t(id)]) sbp.push_back(s.in[1]);
  const Layout want{p, sbp};
  const Layout& from = *home_[size_t(grad)];
  const TensorDesc& desc = g_.values[size_t(grad)].desc;
  if (phys_of_[size_t(grad)].size() != p.size() || boxed_.count({grad, layout_key(want)})) return false;
  // A 0-d gradient (CLIP's logit_scale, a learned clipping bound) stays out: the update would read
  // its part of the bucket as [1], and a plan's view cannot say [] (an empty view means none).
  if (desc.shape.empty()) return false;
  const size_t hops = boxing_route(desc, from, want, &rank_of_device_).size() - 1;
  if (!bucketable(uint64_t(desc.bytes()), hops, from, want)) return false;
  size_t k = 0;
  while (k < buckets_.size() && !(buckets_[k].from == from && buckets_[k].want == want && buckets_[k].dtype == desc.dtype)) ++k;
  if (k == buckets_.size()) buckets_.push_back(Bucket{.from = from, .want = want, .dtype = desc.dtype, .updates = {}, .elements = 0});
  buckets_[k].updates.push_back(id);
  buckets_[k].elements += numel(desc.shape);
  for (ValueId v : n.outputs) awaited_.insert(v);
  for (int32_t i : n.inplace) awaited_.insert(n.inputs[size_t(i)]);
  // The first bucket of a placement is small, as DDP's (1 MiB): the last layers' gradients start
  // their reduction early, beside the rest of the backward pass.
  const bool first = !flushed_on_.count(layout_key(from));
  const uint64_t cap = first ? std::min(o_.bucket_bytes, kFirstBucketBytes) : o_.bucket_bytes;
  if (uint64_t(buckets_[k].elements) * uint64_t(dtype_size(desc.dtype)) >= cap) {
    flushed_on_.insert(layout_key(from));
    flush_bucket(k);
  }
  return true;
}

void Parallelizer::flush_bucket(size_t k) {
  const Bucket b = std::move(buckets_[k]);
  buckets_.erase(buckets_.begin() + std::ptrdiff_t(k));
  awaited_.clear();
  for (const Bucket& other : buckets_)
    for (NodeId u : other.updates) {
      const Node& n = g_.nodes[size_t(u)];
      for (ValueId v : n.outputs) awaited_.insert(v);
      for (int32_t i : n.inplace) awaited_.insert(n.inputs[size_t(i)]);
    }
  if (b.updates.size() == 1) {  // alone after all: reduced as if it had never waited
    materialise(b.updates[0], nullptr);
    return;
  }
  const std::string name = fmt::format("grad_bucket{}", buckets_made_++);
  const Placement& p = b.from.placement;
  const auto at = [&](const std::string& what, size_t j) {
    return p.size() > 1 ? fmt::format("{}/{}@{}", name, what, p.devices[j]) : name + "/" + what;
  };
  std::vector<ValueId> grads;
  std::vector<int64_t> sizes;
  for (NodeId u : b.updates) {
    grads.push_back(g_.nodes[size_t(u)].inputs[1]);
    sizes.push_back(numel(g_.values[size_t(grads.back())].desc.shape));
  }
  const int64_t tail = bucket_tail(b.elements, int64_t(p.size()));
  const size_t first_node = phys_.nodes.size();
  std::vector<ValueId> packed;
  for (size_t j = 0; j < p.size(); ++j) {
    std::vector<ValueId> here;
    for (ValueId g : grads) here.push_back(phys_of_[size_t(g)][j]);
    packed.push_back(pack_bucket(phys_, here, tail, p.devices[j], at("pack", j)));
  }
  const std::string consumer = fmt::format("{} updates, {} ... {}", b.updates.size(), g_.nodes[size_t(b.updates[0])].name,
                                           g_.nodes[size_t(b.updates.back())].name);
  const std::vector<ValueId> reduced = box_tensor(TensorDesc{{b.elements + tail}, b.dtype}, name, kNoValue, b.from, std::move(packed),
                                                  b.want, consumer, true, true, name + "/boxing");
  std::vector<BucketPart> parts(b.updates.size(), BucketPart{.input = 1, .values = {}});
  for (size_t j = 0; j < p.size(); ++j) {
    const std::vector<ValueId> got = unpack_bucket(phys_, reduced[j], sizes, tail, p.devices[j], at("unpack", j));
    for (size_t m = 0; m < got.size(); ++m) {
      phys_.values[size_t(got[m])].logical = grads[m];
      parts[m].values.push_back(got[m]);
    }
  }
  // Once per step, as the gradients they carry (box_tensor did its own nodes).
  for (size_t n = first_node; n < phys_.nodes.size(); ++n) phys_.nodes[n].slots = 1;
  for (size_t m = 0; m < b.updates.size(); ++m) materialise(b.updates[m], &parts[m]);
}

void Parallelizer::flush_buckets() {
  while (!buckets_.empty()) flush_bucket(0);
}

void Parallelizer::materialise(NodeId id, const BucketPart* part) {
  const Node& n = g_.nodes[size_t(id)];
  const Placement& p = stages_[size_t(stage_of_[size_t(id)])];
  const bool backward = n.forward >= 0 || !n.inplace.empty();
  std::vector<std::vector<ValueId>> in_phys(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v == kNoValue) continue;
    if (part && i == part->input) {  // its bucket's part on each device, whole, one axis
      in_phys[i] = part->values;
      continue;
    }
    if (std::count(n.runtime_inputs.begin(), n.runtime_inputs.end(), v) == 0) {
      // Read at compile time only (e.g. Reshape's shape): one device-less copy. A constant that a
      // later node reads at run time (BatchNorm's running statistics, which the forward node lists
      // and the statistics update changes in place) keeps the home that reader chose: whole on
      // each device, where the compile-time reader takes device 0's; split over a tensor-parallel
      // level (BatchNorm's channels), where it takes a whole box of its own that no task reads,
      // and the in-place update owns its shard.
      if (phys_of_[size_t(v)].empty() && home_[size_t(v)] &&
          !std::all_of(home_[size_t(v)]->sbp.begin(), home_[size_t(v)]->sbp.end(),
                       [](const Sbp& x) { return x.kind == Sbp::Kind::broadcast; })) {
        in_phys[i] = std::vector<ValueId>(p.size(), shards_at(v, Layout{Placement{{0}, {1}}, NdSbp{Sbp::B()}})[0]);
        continue;
      }
      if (phys_of_[size_t(v)].empty()) {
        if (!home_[size_t(v)]) home_[size_t(v)] = Layout{Placement{{0}, {1}}, NdSbp{Sbp::B()}};
        shards(v);
      }
      in_phys[i] = std::vector<ValueId>(p.size(), phys_of_[size_t(v)][0]);
      continue;
    }
    NdSbp sbp;
    for (const Signature& s : chosen_[size_t(id)]) sbp.push_back(s.in[i]);
    in_phys[i] = need(v, Layout{p, sbp}, n.name, backward, !n.inplace.empty());
  }
  for (size_t j = 0; j < p.size(); ++j) {
    Node x = n;
    x.device = p.devices[j];
    // 1F1B-like: a forward op of stage s whose output the backward pass reads keeps up to
    // pp - s micro-batches of it (the ones the later stages are still working on), plus one to
    // overlap with the next transfer. An output only the forward pass reads is freed as soon as
    // its reader has acted: streaming slots are enough.
    if (o_.pp > 1 && !backward && read_by_backward(id)) x.slots = std::max(o_.slots, o_.pp - stage_of_[size_t(id)] + 1);
    if (p.size() > 1) x.name = fmt::format("{}@{}", n.name, x.device);
    const std::vector<int64_t> coords = p.coords(j);
    for (size_t l = 0; l < levels_.size(); ++l) apply_tweak(chosen_[size_t(id)][l], coords[l], levels_[l].size, x.kernel_attrs);
    for (size_t i = 0; i < n.inputs.size(); ++i) x.inputs[i] = n.inputs[i] == kNoValue ? kNoValue : in_phys[i][j];
    // A control input is a value of the same stage, each device waiting for its own box of it.
    x.control_inputs.clear();
    for (ValueId v : n.control_inputs)
      if (phys_of_[size_t(v)].size() == p.size() && home_[size_t(v)] && home_[size_t(v)]->placement == p)
        x.control_inputs.push_back(phys_of_[size_t(v)][j]);
    x.runtime_inputs.clear();
    for (ValueId v : n.runtime_inputs) {
      const auto pos = size_t(std::find(n.inputs.begin(), n.inputs.end(), v) - n.inputs.begin());
      x.runtime_inputs.push_back(in_phys[pos][j]);
    }
    if (part) {  // the update reads its part of the bucket in its gradient's shape
      const ValueId grad = n.inputs[part->input];
      const auto k = size_t(std::find(n.runtime_inputs.begin(), n.runtime_inputs.end(), grad) - n.runtime_inputs.begin());
      x.runtime_views.resize(x.runtime_inputs.size());
      x.runtime_views[k] = g_.values[size_t(grad)].desc.shape;
    }
    const auto pid = NodeId(phys_.nodes.size());
    for (ValueId v : x.inputs)
      if (v != kNoValue) phys_.values[size_t(v)].consumers.push_back(pid);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const Value& lv = g_.values[size_t(n.outputs[o])];
      const Region r = local_region(lv.desc.shape, p, home_[size_t(n.outputs[o])]->sbp, j);
      const ValueId pv = phys_.add_value(p.size() > 1 ? fmt::format("{}@{}", lv.name, x.device) : lv.name);
      Value& out = phys_.values[size_t(pv)];
      out.desc = TensorDesc{r.size, lv.desc.dtype};
      out.known = true;
      out.producer = pid;
      out.logical = n.outputs[o];
      out.shard_begin = r.begin;
      x.outputs[o] = pv;
      phys_of_[size_t(n.outputs[o])].push_back(pv);
    }
    phys_.nodes.push_back(std::move(x));
  }
}

void Parallelizer::run() {
  rank_of_device_ = rank_of_devices(o_, c_.parallel.devices);
  place();
  for (size_t l = 0; l < levels_.size(); ++l)
    if (levels_[l].data_parallel) dp_level_ = l;
  for (const auto& [w, grad] : c_.training.weights) weights_.push_back(w);
  home_.assign(g_.values.size(), std::nullopt);
  phys_of_.assign(g_.values.size(), {});
  chosen_.assign(g_.nodes.size(), {});
  const Layout source{Placement{{0}, {1}}, NdSbp{Sbp::B()}};
  for (ValueId v : g_.inputs) home_[size_t(v)] = source;
  find_deferred();
  for (NodeId n = 0; n < NodeId(g_.nodes.size()); ++n)
    if (!deferred_[size_t(n)]) choose_then_deferred(n);
  for (NodeId n = NodeId(g_.nodes.size()); n-- > 0;)  // deferred ones nothing reads
    if (deferred_[size_t(n)] && chosen_[size_t(n)].empty()) choose(n);

  // Every choice costed inputs as arriving split over the data-parallel level (input_hint), so
  // where they really come from can be settled now that every reader has chosen.
  const bool ranks = std::any_of(rank_of_device_.begin(), rank_of_device_.end(), [](int32_t r) { return r > 0; });
  if (ranks)
    for (ValueId v : g_.inputs) home_[size_t(v)] = input_home(v, rank_of_device_);
  else if (dp_level_ < levels_.size() && o_.tp == 1) {
    // One rank, data parallel only: a source per device (see input_home).
    std::vector<int32_t> each(rank_of_device_.size());
    std::iota(each.begin(), each.end(), 0);
    for (ValueId v : g_.inputs) home_[size_t(v)] = input_home(v, each);
  }

  phys_.name = g_.name;
  phys_.source_file = g_.source_file;
  for (ValueId v : g_.inputs) shards(v);  // the source's register keeps the inputs' order
  for (NodeId id = 0; id < NodeId(g_.nodes.size()); ++id) {
    if (join_bucket(id)) continue;
    for (ValueId v : g_.nodes[size_t(id)].inputs)
      if (awaited_.count(v)) flush_buckets();  // it reads what a waiting update reads or writes
    for (ValueId v : g_.nodes[size_t(id)].control_inputs)
      if (awaited_.count(v)) flush_buckets();
    materialise(id, nullptr);
    if (o_.max_parallel_nodes > 0 && phys_.nodes.size() > o_.max_parallel_nodes)
      fail({.field = "--auto"}, "its plan passed {} nodes at node {} of {}, beyond the bound of {} (4 times the first plan weighed)",
           phys_.nodes.size(), id + 1, g_.nodes.size(), o_.max_parallel_nodes);
  }
  flush_buckets();
  refresh_replicas();
  // Graph outputs go to the sink on device 0, whole.
  const Layout sink{Placement{{0}, {1}}, NdSbp{Sbp::B()}};
  for (ValueId v : g_.outputs) {
    const ValueId pv = need(v, sink, "sink", false)[0];
    phys_.values[size_t(pv)].graph_output = true;
    phys_.values[size_t(pv)].name = g_.values[size_t(v)].name;
    phys_.outputs.push_back(pv);
  }
  for (size_t v = 0; v < g_.values.size(); ++v) {
    if (!home_[v]) continue;
    const Value& val = g_.values[v];
    const int32_t stage = val.producer >= 0 ? stage_of_[size_t(val.producer)] : (val.consumers.empty() ? 0 : stage_of_[size_t(val.consumers[0])]);
    c_.parallel.tensors.push_back(plan::TensorLayout{.name = val.name, .desc = val.desc, .placement = home_[v]->placement.str(),
                                                   .sbp = sbp_str(home_[v]->sbp), .stage = stage});
  }
  c_.graph = std::move(phys_);
}

}  // namespace

bool Parallelize::run(Compilation& c) {
  const CompileOptions& o = c.options;
  if (o.zero < 0 || o.zero > 3) fail({.field = "--zero"}, "stage {} does not exist: 0 (none), 1, 2 or 3", o.zero);
  if (o.zero != 0 && (!o.train || o.dp < 2))
    fail({.field = "--zero"}, "--zero {} needs --train and --dp 2 or more (it shards over the data-parallel devices)", o.zero);
  if (o.devices == 1 && o.dp == 1 && o.tp == 1 && o.pp == 1) return false;
  if (o.dp < 1 || o.tp < 1 || o.pp < 1) fail({.field = "--dp/--tp/--pp"}, "must each be at least 1");
  if (int64_t(o.dp) * o.tp * o.pp != o.devices)
    fail({.field = "--devices"}, "{} devices, but --dp {} x --tp {} x --pp {} = {}", o.devices, o.dp, o.tp, o.pp, int64_t(o.dp) * o.tp * o.pp);
  int64_t forward_ops = 0;
  for (const Node& n : c.graph.nodes) forward_ops += n.forward < 0 && n.inplace.empty();
  if (o.pp > forward_ops)
    fail({.field = "--pp"}, "{} pipeline stages, but the model has {} forward op{}; each stage needs at least one",
         o.pp, forward_ops, forward_ops == 1 ? "" : "s");
  if (o.pp > 1 && o.train && o.micro_batches < o.pp)
    fail({.field = "--micro-batches"}, "{} micro-batches cannot keep {} pipeline stages busy; give at least {}", o.micro_batches, o.pp, o.pp);
  // A tensor without elements has no part on any device for boxing to move (found by fuzz_onnx).
  for (const Node& n : c.graph.nodes)
    for (ValueId v : n.outputs)
      if (v != kNoValue && c.graph.values[size_t(v)].known && numel(c.graph.values[size_t(v)].desc.shape) == 0)
        fail({.file = c.graph.source_file, .node = n.name, .op = n.op_type},
             "output '{}' has shape {}, no elements: parallel plans need every tensor to hold some; compile it for one device",
             c.graph.values[size_t(v)].name, shape_str(c.graph.values[size_t(v)].desc.shape));
  for (ValueId v : c.graph.inputs)
    if (numel(c.graph.values[size_t(v)].desc.shape) == 0)
      fail({.file = c.graph.source_file, .field = "input '" + c.graph.values[size_t(v)].name + "'"},
           "has shape {}, no elements: parallel plans need every tensor to hold some", shape_str(c.graph.values[size_t(v)].desc.shape));
  c.logical = std::move(c.graph);
  c.parallel.devices = o.devices;
  c.parallel.stage_of_device.clear();
  for (int32_t d = 0; d < o.devices; ++d) c.parallel.stage_of_device.push_back(d / (o.dp * o.tp));
  Parallelizer p(c);
  p.run();
  return true;
}

}  // namespace of::compiler
