// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/stages.h"

#include <algorithm>

#include "compiler/parallel/cost_model.h"

namespace of::compiler {

std::vector<int32_t> pipeline_stages(const Graph& g, int32_t pp, const std::vector<NodeId>& starts) {
  std::vector<int32_t> stage(g.nodes.size(), 0);
  double total = 0;
  std::vector<double> work(g.nodes.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].forward < 0 && g.nodes[n].inplace.empty()) total += work[n] = flops_of(g, g.nodes[n]);
  double before = 0;
  int32_t forward_left = 0;  // forward ops not yet placed
  for (const Node& node : g.nodes) forward_left += node.forward < 0 && node.inplace.empty();
  int32_t last_stage = -1;  // the stage of the forward op placed last
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.forward >= 0) {
      stage[n] = stage[size_t(node.forward)];
    } else if (!node.inplace.empty()) {
      // An update runs where its weight is first read.
      const Value& w = g.values[size_t(node.inputs[size_t(node.inplace[0])])];
      stage[n] = w.consumers.empty() ? 0 : stage[size_t(w.consumers[0])];
    } else if (!starts.empty()) {
      stage[n] = int32_t(std::upper_bound(starts.begin(), starts.end(), NodeId(n)) - starts.begin());
    } else {
      const double mid = total > 0 ? (before + work[n] / 2) / total : 0;
      int32_t s = std::min(pp - 1, int32_t(mid * pp));
      // No stage left empty: never skip one, and leave an op for each stage still to come.
      s = last_stage < 0 ? 0 : std::clamp(s, last_stage, std::min(pp - 1, last_stage + 1));
      s = std::max(s, pp - forward_left);
      stage[n] = last_stage = s;
      --forward_left;
      before += work[n];
    }
  }
  return stage;
}

}  // namespace of::compiler
