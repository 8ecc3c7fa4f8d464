// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/strategy_cost.h"

#include <algorithm>
#include <cmath>

#include "compiler/parallel/stages.h"
#include "kernels/kernel_work.h"

namespace of::compiler {

namespace {

double op_seconds(const Graph& g, const Node& n, const MachineCosts& c) {
  if (n.kernel.empty()) return 0;
  std::vector<TensorDesc> in, out;
  for (ValueId v : n.inputs) in.push_back(v == kNoValue ? TensorDesc{} : g.values[size_t(v)].desc);
  for (ValueId v : n.outputs) out.push_back(g.values[size_t(v)].desc);
  const kernels::KernelWork w = kernels::kernel_work(n.kernel, n.kernel_attrs, in, out);
  if (auto it = c.kernels.find(n.kernel); it != c.kernels.end()) return it->second.fixed_s + w.measure() / it->second.rate;
  return w.measure() / c.rates[size_t(w.kind)];
}

bool matrix_product(const Node& n) { return n.kernel == "gemm" || n.kernel == "matmul" || n.kernel == "matmul_tb" || n.kernel == "conv"; }

// An all-reduce of `bytes` over `k` devices `stride` apart (rank-major numbering): ring-like
// bytes over the slowest link the group spans, tree-like latency.
double all_reduce_seconds(double bytes, int32_t k, int32_t stride, const StrategyShape& s, const MachineCosts& c) {
  if (k <= 1 || bytes <= 0) return 0;
  const int32_t per_rank = std::max(1, s.devices / std::max(1, s.ranks));
  const bool across_ranks = int64_t(k) * stride > per_rank;
  const double bandwidth = across_ranks ? c.rank_bytes_per_s : c.copy_bytes_per_s;
  const double latency = across_ranks ? c.rank_latency_s : c.task_overhead_s;
  return 2.0 * double(k - 1) / double(k) * bytes / bandwidth + 2.0 * std::ceil(std::log2(double(k))) * latency;
}

}  // namespace

StrategyEstimate estimate_strategy(const Graph& g, const StrategyShape& s, const MachineCosts& c) {
  const std::vector<int32_t> stage = pipeline_stages(g, s.pp, {});
  const auto stages = size_t(std::max(1, s.pp));
  std::vector<double> piece_s(stages, 0), update_s(stages, 0), grad_bytes(stages, 0), tp_bytes(stages, 0);
  const double shared = double(s.dp) * double(s.tp);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const size_t st = size_t(std::clamp(stage[n], 0, s.pp - 1));
    const double work = op_seconds(g, node, c);
    if (!node.inplace.empty()) {  // an update: its weight's gradient is reduced over dp first
      update_s[st] += c.task_overhead_s + work / (s.zero ? shared : double(s.tp));
      grad_bytes[st] += double(g.values[size_t(node.inputs[size_t(node.inplace[0])])].desc.bytes());
      continue;
    }
    // Under tp an op's layout conversions (boxing: slices, collective parts, copies) add acts on
    // its path, about 1 + log2(tp) of them (what the played plans of the GPT over 16x8 GPUs show:
    // 4x the tasks per device at tp 2; their step time follows the acts, not the bytes).
    const double boxing_acts = s.tp > 1 ? 1 + std::log2(double(s.tp)) : 0;
    piece_s[st] += c.task_overhead_s * (1 + boxing_acts) + work / shared;
    if (node.forward < 0 && matrix_product(node) && !node.outputs.empty())
      tp_bytes[st] += double(g.values[size_t(node.outputs[0])].desc.bytes()) / double(s.dp);
  }
  StrategyEstimate e;
  const double m = std::max(1, s.micro_batches);
  const double slowest = *std::max_element(piece_s.begin(), piece_s.end());
  e.compute_s = (m + double(s.pp) - 1) * slowest + *std::max_element(update_s.begin(), update_s.end());
  for (size_t st = 0; st < stages; ++st) {
    e.dp_s = std::max(e.dp_s, all_reduce_seconds(grad_bytes[st] / double(s.tp), s.dp, s.tp, s, c));
    e.tp_s = std::max(e.tp_s, m * 2 * all_reduce_seconds(tp_bytes[st], s.tp, 1, s, c));
  }
  if (s.pp > 1) {
    // What crosses each boundary: the outputs of a stage's forward ops read in a later stage.
    double crossing = 0;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (g.nodes[n].forward >= 0 || !g.nodes[n].inplace.empty()) continue;
      for (ValueId v : g.nodes[n].outputs)
        for (NodeId r : g.values[size_t(v)].consumers)
          if (g.nodes[size_t(r)].forward < 0 && g.nodes[size_t(r)].inplace.empty() && stage[size_t(r)] > stage[n]) {
            crossing += double(g.values[size_t(v)].desc.bytes()) / shared;
            break;
          }
    }
    const int32_t per_rank = std::max(1, s.devices / std::max(1, s.ranks));
    const bool across_ranks = int64_t(s.dp) * s.tp < s.devices && s.dp * s.tp >= per_rank;
    const double bandwidth = across_ranks ? c.rank_bytes_per_s : c.copy_bytes_per_s;
    e.pp_s = m * 2 * crossing / bandwidth;  // forward and back, each piece
  }
  return e;
}

}  // namespace of::compiler
