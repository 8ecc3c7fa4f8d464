// SPDX-License-Identifier: Apache-2.0
#include "compiler/ops/if_branch.h"

#include <cstring>

#include "common/error.h"
#include "compiler/ops/ops.h"

namespace of::compiler {

size_t take_if_branch(Graph& g, size_t n) {
  const Node ifn = g.nodes[n];  // a copy: the node list changes below
  const Where w{.file = g.source_file, .node = ifn.name, .op = ifn.op_type};
  const Value& cond = g.values[size_t(ifn.inputs.at(0))];
  const std::vector<uint8_t>* c = cond.contents();
  if (!c)
    fail(w, "its condition '{}' is computed at run time; ofc takes an If whose condition it can compute when compiling (from shapes "
            "and constants), as torch's export of squeeze(dim) writes",
         cond.name);
  if (numel(cond.desc.shape) != 1) fail(w, "its condition '{}' has shape {}, not one element", cond.name, shape_str(cond.desc.shape));
  bool taken = false;
  for (size_t b = 0; b < c->size(); ++b) taken = taken || (*c)[b] != 0;  // any non-zero byte: true (bool, integers, floats but -0.0)
  if (cond.desc.dtype == DType::f32) {
    float f = 0;
    std::memcpy(&f, c->data(), 4);
    taken = f != 0;
  }
  const char* which = taken ? "then_branch" : "else_branch";
  const int64_t index = ifn.attrs.get_int(which, -1);
  if (index < 0 || index >= int64_t(g.branches.size())) fail(w, "has no {}", which);
  const Branch b = g.branches[size_t(index)];
  if (b.outputs.size() != ifn.outputs.size())
    fail(w, "its {} has {} outputs, the If {}", which, b.outputs.size(), ifn.outputs.size());
  // A branch node whose output is an If output writes it directly; any other If output (an outer
  // value passed through, or one node's output given twice) is an Identity of it.
  std::vector<int64_t> writes(b.nodes.size(), -1);
  std::vector<bool> written(ifn.outputs.size(), false);
  for (size_t k = 0; k < b.outputs.size(); ++k)
    if (b.outputs[k].local && writes[size_t(b.outputs[k].index)] < 0) {
      writes[size_t(b.outputs[k].index)] = int64_t(k);
      written[k] = true;
    }
  std::vector<ValueId> local(b.nodes.size(), kNoValue);
  auto resolve = [&](const BranchRef& r) {
    if (r.index < 0) return kNoValue;
    return r.local ? local.at(size_t(r.index)) : ifn.inputs.at(size_t(r.index));
  };
  std::vector<Node> nodes;
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    const BranchNode& bn = b.nodes[i];
    Node node{.name = bn.name, .op_type = bn.op_type, .domain = bn.domain, .attrs = bn.attrs};
    for (const BranchRef& r : bn.inputs) node.inputs.push_back(resolve(r));
    local[i] = writes[i] >= 0 ? ifn.outputs[size_t(writes[i])] : g.add_value(bn.output);
    node.outputs = {local[i]};
    nodes.push_back(std::move(node));
  }
  for (size_t k = 0; k < b.outputs.size(); ++k)
    if (!written[k])
      nodes.push_back(Node{.name = fmt::format("{}/{}_output_{}", ifn.name, which, k), .op_type = "Identity", .inputs = {resolve(b.outputs[k])},
                           .outputs = {ifn.outputs[k]}});
  const size_t added = nodes.size();
  g.nodes.erase(g.nodes.begin() + long(n));
  g.nodes.insert(g.nodes.begin() + long(n), std::make_move_iterator(nodes.begin()), std::make_move_iterator(nodes.end()));
  relink(g);
  return added;
}

namespace {

void infer_if(OpCtx& c) {
  // infer-shapes takes the branch (take_if_branch) before any If is inferred.
  c.fail("an If was not replaced by its branch");
}

}  // namespace

OpDef if_def() { return {"If", infer_if, lower_composite, nullptr, {int_attr("then_branch", 0, kMaxInt), int_attr("else_branch", 0, kMaxInt)}}; }

}  // namespace of::compiler
