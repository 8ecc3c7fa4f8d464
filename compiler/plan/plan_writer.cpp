// SPDX-License-Identifier: Apache-2.0
// Fills in the plan's header fields (model, job, tensors, weights) and writes both files.
#include "compiler/plan/plan_writer.h"

#include <filesystem>

#include "common/error.h"
#include "common/file_util.h"
#include "common/safetensors.h"
#include "compiler/passes/pass.h"
#include "schemas/plan_codec.h"

namespace of::compiler {

std::string write_plan(const Compilation& c, const std::string& plan_path) {
  const Graph& g = c.graph;
  plan::Plan p = c.tasks;

  SafetensorsWriter weights;
  for (const Variable& v : p.variables) {
    const Value& val = g.values[size_t(v.tensor)];
    weights.add(v.key, val.desc.dtype, val.desc.shape, val.data->data());
  }
  std::vector<uint8_t> weight_bytes = weights.serialize();
  std::filesystem::path path(plan_path);
  p.weights = path.stem().string() + ".safetensors";
  p.weights_bytes = weight_bytes.size();
  p.weights_crc32 = crc32_of(weight_bytes.data(), weight_bytes.size());

  p.model = g.name;
  const Shape& first = g.values[size_t(g.inputs[0])].desc.shape;
  p.job = plan::Job{.kind = plan::JobKind::infer, .batch = first.empty() ? 1 : first[0], .pieces = c.options.pieces};
  for (const Value& v : g.values) p.tensors.push_back({v.name, v.desc});

  std::vector<uint8_t> plan_bytes = plan::encode(p);
  std::string weights_path = (path.parent_path() / p.weights).string();
  if (std::filesystem::path(weights_path).lexically_normal() == path.lexically_normal())
    fail({.file = plan_path}, "the plan would overwrite its own weights file; name the plan *.ofp");
  write_file_atomic(weights_path, weight_bytes);
  write_file_atomic(plan_path, plan_bytes);
  return weights_path;
}

}  // namespace of::compiler
