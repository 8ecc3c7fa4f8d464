// SPDX-License-Identifier: Apache-2.0
// infer-shapes: afterwards every value has a shape and dtype, every node a kernel (from its
// OpDef's lower()) that exists in the kernel registry for the node's device and dtype, and no
// node computes only from compile-time constants (those were folded into constants).
#include "common/error.h"
#include "compiler/ops/const_eval.h"
#include "compiler/ops/registry.h"
#include "compiler/passes/pass.h"
#include "kernels/catalog.h"

namespace of::compiler {

bool InferShapes::run(Compilation& c) {
  Graph& g = c.graph;
  mark_comparison_only(g);  // before folding: what only comparisons read folds like a constant
  std::vector<bool> folded(g.nodes.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
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
      def->lower(ctx);
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
  remove_nodes(g, folded);
  return true;
}

}  // namespace of::compiler
