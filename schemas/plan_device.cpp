// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include <algorithm>

#include "schemas/plan_model.h"

namespace of::plan {

std::string device_label(const Plan& p, int32_t device) {
  const DeviceRef& d = p.devices[size_t(device)];
  const char* kind = d.kind == 0 ? "cpu" : "cuda";
  const bool ranks = std::any_of(p.devices.begin(), p.devices.end(), [](const DeviceRef& x) { return x.rank != 0; });
  return ranks ? fmt::format("rank{}/{}:{}", d.rank, kind, d.index) : fmt::format("{}:{}", kind, d.index);
}

TensorDesc input_desc(const Plan& p, const TaskInput& in) {
  if (in.kind == InputKind::variable) return p.tensors[size_t(p.variables[size_t(in.id)].tensor)].desc;
  TensorDesc d = p.regsts[size_t(in.id)].blobs[size_t(in.blob)].desc;
  if (!in.view.empty()) d.shape = in.view;  // a reshaped tensor read in place
  return d;
}

size_t data_regsts(const Plan& p, const Task& t) {
  size_t n = 0;
  while (n < t.out_regsts.size() && !p.regsts[size_t(t.out_regsts[n])].blobs.empty()) ++n;
  return n;
}

std::vector<TensorDesc> output_descs(const Plan& p, const Task& t) {
  std::vector<TensorDesc> out;
  for (size_t k = 0; k < data_regsts(p, t); ++k)
    for (const Blob& b : p.regsts[size_t(t.out_regsts[k])].blobs) out.push_back(b.desc);
  return out;
}

}  // namespace of::plan
