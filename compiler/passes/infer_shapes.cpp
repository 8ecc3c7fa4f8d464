// SPDX-License-Identifier: Apache-2.0
// infer-shapes: afterwards every value has a shape and dtype, every node a kernel (from its
// OpDef's lower()) that exists in the kernel registry for the node's device and dtype, no
// node computes only from compile-time constants (those were folded into constants), and no
// composite op is left (each is replaced, in place, by the ops its OpDef's expand() emits: once
// its inputs have shapes, which is why it happens here), nor any If (its condition folds here,
// and the branch it takes replaces it: compiler/ops/if_branch.h).
#include <algorithm>

#include "common/error.h"
#include "compiler/ops/const_eval.h"
#include "compiler/ops/if_branch.h"
#include "compiler/ops/registry.h"
#include "compiler/passes/pass.h"
#include "kernels/catalog.h"

namespace of::compiler {

bool InferShapes::run(Compilation& c) {
  Graph& g = c.graph;
  mark_comparison_only(g);  // before folding: what only comparisons read folds like a constant
  std::vector<bool> folded(g.nodes.size(), false);
  std::vector<bool> composite(g.nodes.size(), false);  // replaced by expansions[n]
  // Per node, the ops a composite stands for (expanded as soon as it is reached, so its readers
  // see the shapes those ops give).
  std::vector<std::vector<Node>> expansions(g.nodes.size());
  bool expanded = false;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].op_type == "If" && g.nodes[n].domain.empty()) {
      // Its condition is folded by now: the taken branch's nodes take its place, inferred next.
      const size_t added = take_if_branch(g, n);
      folded.insert(folded.begin() + long(n), added - 1, false);
      composite.insert(composite.begin() + long(n), added - 1, false);
      expansions.insert(expansions.begin() + long(n), added - 1, std::vector<Node>{});
      --n;
      continue;
    }
    Node& node = g.nodes[n];
    const OpDef* def = find_op(node.domain, node.op_type);
    OF_ASSERT(def, "import let an unsupported op through: " + node.op_type);
    OpCtx ctx(g, node);
    try {
      check_attrs(*def, ctx);  // before folding: const_eval reads the same attributes
      // Shape arithmetic and other constant-only nodes become constants (const_eval.cpp).
      if (try_fold(g, node)) {
        folded[n] = true;
        continue;
      }
      def->infer(ctx);
      for (size_t i = 0; i < node.outputs.size(); ++i)
        if (!g.values[node.outputs[i]].known) ctx.fail("output {} has no inferred shape", i);
      def->lower(ctx);  // a composite's only normalizes its attributes (kernel_attrs) for expand()
      if (is_composite(*def, ctx)) {
        composite[n] = true;
        ExpandCtx expand(g, node, expansions[n]);
        def->expand(expand);
        expanded = true;
        // The last op writes the composite's outputs (and may add its own after them: what its
        // kernel keeps for the backward pass).
        const bool ends_in_output = !expansions[n].empty() && expansions[n].back().outputs.size() >= node.outputs.size() &&
                                    std::equal(node.outputs.begin(), node.outputs.end(), expansions[n].back().outputs.begin());
        // Its inputs were constants and its last op folded into its output: nothing runs.
        if (g.values[size_t(node.outputs[0])].contents() && !ends_in_output) {
          folded[n] = true;
          continue;
        }
        OF_ASSERT(ends_in_output, "a composite's expansion does not end in its output: " + node.name);
        continue;
      }
      // The kernel runs on the dtype of the node's first output.
      DType dtype = g.values[node.outputs[0]].desc.dtype;
      if (!kernels::kernel_exists(node.kernel, kernels::DeviceKind::cpu, dtype))
        ctx.fail("no kernel '{}' for cpu:{}", node.kernel, dtype_name(dtype));
    } catch (const Error& e) {
      // A failure from shared code (a shape past int64 in numel) says what but not where.
      if (!e.where().node.empty() || !e.where().file.empty()) throw;
      throw Error(Where{.file = g.source_file, .node = node.name, .op = node.op_type}, e.what());
    }
  }
  if (!expanded) {
    remove_nodes(g, folded);
    return true;
  }
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (folded[n]) continue;
    if (composite[n])
      for (Node& e : expansions[n]) nodes.push_back(std::move(e));
    else
      nodes.push_back(std::move(g.nodes[n]));
  }
  g.nodes = std::move(nodes);
  relink(g);  // before autodiff: no node refers to another yet
  return true;
}

}  // namespace of::compiler
