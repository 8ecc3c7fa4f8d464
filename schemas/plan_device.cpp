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

}  // namespace of::plan
