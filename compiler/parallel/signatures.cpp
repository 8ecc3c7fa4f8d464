// SPDX-License-Identifier: Apache-2.0
// The rule families, the lookup of each kernel's rule and the fitting every rule's output gets.
// The rules themselves live beside what emits each kernel (see signatures.h).
#include "compiler/parallel/signatures.h"

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "compiler/ops/registry.h"
#include "compiler/passes/training_kernels.h"

namespace of::compiler {

using Sig = Signature;

namespace sbp {

const Shape& shape_of(const Graph& g, ValueId v) { return g.values[size_t(v)].desc.shape; }

namespace {

// The last axis comes first: where costs tie (after a partial sum), a feature split lets the next
// matmul split its reduction, not its rows.
void elementwise_rule(const Graph& g, const Node& n, bool linear, std::vector<Sig>& out) {
  const Shape& y = shape_of(g, n.outputs[0]);
  for (size_t a = y.size(); a-- > 0;) {
    if (y[a] <= 1) continue;
    Sig s{{}, {Sbp::S(int64_t(a))}, Sig::Tweak::none, true};
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        s.in.push_back(Sbp::B());
        continue;
      }
      const Shape& x = shape_of(g, v);
      const int64_t ax = int64_t(a) - int64_t(y.size() - x.size());
      s.in.push_back(ax >= 0 && x[size_t(ax)] == y[a] ? Sbp::S(ax) : Sbp::B());
    }
    out.push_back(std::move(s));
  }
  if (!linear) return;
  for (ValueId v : n.inputs)
    if (v == kNoValue || shape_of(g, v) != y) return;
  out.push_back(Sig{std::vector<Sbp>(n.inputs.size(), Sbp::P()), {Sbp::P()}, Sig::Tweak::none, true});
}

}  // namespace

void elementwise(const Graph& g, const Node& n, std::vector<Sig>& out) { elementwise_rule(g, n, false, out); }
void elementwise_linear(const Graph& g, const Node& n, std::vector<Sig>& out) { elementwise_rule(g, n, true, out); }

void batch_rows(const Node& n, std::vector<bool> batched, bool out_partial, Sig::Tweak tweak, std::vector<Sig>& out) {
  batched.resize(n.inputs.size(), false);
  Sig s{{}, {}, tweak, true};
  for (size_t i = 0; i < n.inputs.size(); ++i) s.in.push_back(batched[i] ? Sbp::S(0) : Sbp::B());
  for (size_t o = 0; o < n.outputs.size(); ++o) s.out.push_back(out_partial ? Sbp::P() : Sbp::S(0));
  out.push_back(std::move(s));
}

void update(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const Shape& w = shape_of(g, n.inputs[0]);
  for (size_t a = 0; a < w.size(); ++a) {
    if (w[a] <= 1) continue;
    Sig s{{}, {}, Sig::Tweak::none, true};
    for (ValueId v : n.inputs) s.in.push_back(v != kNoValue && shape_of(g, v) == w ? Sbp::S(int64_t(a)) : Sbp::B());
    for (ValueId v : n.outputs) s.out.push_back(shape_of(g, v) == w ? Sbp::S(int64_t(a)) : Sbp::B());
    out.push_back(std::move(s));
  }
}

void other_axes(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const int64_t axis = n.kernel_attrs.get_int("axis", -1);
  const Shape& y = shape_of(g, n.outputs[0]);
  for (int64_t a = 0; a < int64_t(y.size()); ++a) {
    if (a == axis || y[size_t(a)] <= 1) continue;
    out.push_back(Sig{std::vector<Sbp>(n.inputs.size(), Sbp::S(a)), std::vector<Sbp>(n.outputs.size(), Sbp::S(a)), Sig::Tweak::none, true});
  }
}

}  // namespace sbp

std::vector<KernelSbp> all_kernel_sbp() {
  std::vector<KernelSbp> all;
  for (const OpDef& op : all_ops()) all.insert(all.end(), op.kernels.begin(), op.kernels.end());
  for (const KernelSbp& k : training_kernel_sbp()) all.push_back(k);
  // Boxing's own kernel (boxing.cpp): made after every layout is chosen, never given one.
  all.push_back(broadcast_only("collective_part", "one device's part of a collective that boxing lowers to, after SBP is chosen"));
  return all;
}

namespace {

const KernelSbp* find_rule(const std::string& kernel) {
  static const std::vector<KernelSbp> all = all_kernel_sbp();
  static const std::map<std::string_view, const KernelSbp*> by_name = [] {
    std::map<std::string_view, const KernelSbp*> m;
    for (const KernelSbp& k : all) m.emplace(k.kernel, &k);
    return m;
  }();
  auto it = by_name.find(kernel);
  return it == by_name.end() ? nullptr : it->second;
}

}  // namespace

std::vector<Signature> signatures_of(const Graph& g, const Node& n) {
  const KernelSbp* rule = find_rule(n.kernel);
  OF_ASSERT(rule != nullptr, "kernel '" + n.kernel + "' (node " + n.name + ") has no SBP rule");
  std::vector<Sig> out;
  if (rule->rule) rule->rule(g, n, out);
  // A rule that names more inputs or outputs than the node has does not describe it and is
  // dropped; inputs after those it names are broadcast.
  std::vector<Sig> fitted;
  for (Sig& s : out) {
    if (s.in.size() > n.inputs.size() || s.out.size() != n.outputs.size()) continue;
    s.in.resize(n.inputs.size(), Sbp::B());
    fitted.push_back(std::move(s));
  }
  fitted.push_back(Sig{std::vector<Sbp>(n.inputs.size(), Sbp::B()), std::vector<Sbp>(n.outputs.size(), Sbp::B())});
  fitted.back().never_data_parallel = rule->per_device_batch;
  return fitted;
}

void apply_tweak(const Signature& s, int64_t coord, int64_t parts, Attrs& attrs) {
  switch (s.tweak) {
    case Signature::Tweak::none: return;
    case Signature::Tweak::mean_over_parts: attrs.set_float("scale", attrs.get_float("scale", 1.0f) / float(parts)); return;
    case Signature::Tweak::first_adds_bias:
      if (coord != 0) attrs.set_float("beta", 0.0f);
      return;
  }
}

}  // namespace of::compiler
