// SPDX-License-Identifier: Apache-2.0
// ExpandCtx: how a composite op appends the ops it stands for (infer-shapes expands it).
#include <cstring>

#include "compiler/ops/const_eval.h"
#include "compiler/ops/op_def.h"
#include "compiler/ops/registry.h"
#include "kernels/catalog.h"

namespace of::compiler {

ValueId ExpandCtx::emit(const std::string& op, std::vector<ValueId> inputs, Attrs attrs, ValueId into) {
  // "of.SoftmaxCrossEntropy": one of our own ops, in its domain.
  const size_t dot = op.rfind('.');
  const std::string domain = dot == std::string::npos ? "" : op.substr(0, dot), op_type = op.substr(dot + 1);
  const OpDef* def = find_op(domain, op_type);
  OF_ASSERT(def, "a composite emits an op that is not registered: " + op);
  Node n{.name = fmt::format("{}/{}_{}", node_.name, op_type, out_.size()), .op_type = op_type, .domain = domain,
         .inputs = std::move(inputs), .attrs = std::move(attrs)};
  const ValueId out = into != kNoValue ? into : g_.add_value(n.name);
  n.outputs = {out};
  const TensorDesc promised = g_.values[size_t(out)].desc;  // the composite's output: what its infer() said
  g_.values[size_t(out)].known = false;  // the emitted op infers it
  OpCtx ctx(g_, n);
  check_attrs(*def, ctx);
  // On constants the op folds as it would have, written out in the model (the composite's
  // output too: infer-shapes then drops the composite as folded).
  if (try_fold(g_, n)) return out;
  def->infer(ctx);
  OF_ASSERT(g_.values[size_t(out)].known, "an expanded op inferred no output: " + n.name);
  OF_ASSERT(!is_composite(*def, ctx), "a composite emits another composite: " + n.name);
  OF_ASSERT(into == kNoValue || (g_.values[size_t(out)].desc.shape == promised.shape && g_.values[size_t(out)].desc.dtype == promised.dtype),
            fmt::format("{}: the expansion gives {}, the composite promised {}", n.name, shape_str(g_.values[size_t(out)].desc.shape),
                        shape_str(promised.shape)));
  def->lower(ctx);
  if (!kernels::kernel_exists(n.kernel, kernels::DeviceKind::cpu, g_.values[size_t(out)].desc.dtype))
    fail("its expansion's {} has no kernel '{}' for cpu:{}", op_type, n.kernel, dtype_name(g_.values[size_t(out)].desc.dtype));
  out_.push_back(std::move(n));
  return out;
}

void ExpandCtx::untrained_input(size_t i) {
  OF_ASSERT(!out_.empty() && i < out_.back().inputs.size(), "untrained_input: no such input of the last emitted node");
  out_.back().state_inputs.push_back(i);
}

ValueId ExpandCtx::ints(const std::vector<int64_t>& v) {
  const ValueId id = g_.add_value(fmt::format("{}/ints_{}", node_.name, constants_++));
  Value& val = g_.values[size_t(id)];
  val.desc = TensorDesc{{int64_t(v.size())}, DType::i64};
  val.data = std::vector<uint8_t>(v.size() * 8);
  if (!v.empty()) std::memcpy(val.data->data(), v.data(), v.size() * 8);
  val.known = true;
  return id;
}

ValueId ExpandCtx::floats(Shape shape, const std::vector<float>& values) {
  const ValueId id = g_.add_value(fmt::format("{}/floats_{}", node_.name, constants_++));
  Value& val = g_.values[size_t(id)];
  OF_ASSERT(int64_t(values.size()) == numel(shape), "ExpandCtx::floats: values do not fill the shape");
  val.desc = TensorDesc{std::move(shape), DType::f32};
  val.data = std::vector<uint8_t>(values.size() * 4);
  if (!values.empty()) std::memcpy(val.data->data(), values.data(), values.size() * 4);
  val.known = true;
  return id;
}

}  // namespace of::compiler
