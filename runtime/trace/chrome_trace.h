// SPDX-License-Identifier: Apache-2.0
// Chrome-trace JSON (chrome://tracing, Perfetto) of actor activity: one row per task, one slice
// per act named "<task id> <op>", with the piece number as an argument.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/actors/protocol.h"
#include "schemas/plan_model.h"

namespace of::runtime {

void write_chrome_trace(const std::string& path, const plan::Plan& p,
                        const std::vector<std::unique_ptr<TaskState>>& tasks);

}  // namespace of::runtime
