// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/cost_model.h"

#include "kernels/kernel_work.h"

namespace of::compiler {

double flops_of(const Graph& g, const Node& n) {
  std::vector<TensorDesc> in, out;
  for (ValueId v : n.inputs) in.push_back(v == kNoValue ? TensorDesc{} : g.values[size_t(v)].desc);
  for (ValueId v : n.outputs) out.push_back(g.values[size_t(v)].desc);
  return kernels::kernel_work(n.kernel, n.kernel_attrs, in, out).flops;
}

}  // namespace of::compiler
