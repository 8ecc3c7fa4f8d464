// SPDX-License-Identifier: Apache-2.0
// How much of each device's arena a run really touched: the end of the highest slot any task
// wrote (or lent: a weight's version 0) and of every variable. ofrun --memory-report prints it
// beside what the plan promised (ofdump --memory), so the two can be compared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/actors/protocol.h"
#include "schemas/plan_model.h"

namespace of::runtime {

std::vector<uint64_t> arena_high_water(const plan::Plan& p, const std::vector<std::unique_ptr<TaskState>>& tasks);

// "ofrun: arena high-water mark: cpu:0 123 bytes, cpu:1 456 bytes"
std::string high_water_line(const plan::Plan& p, const std::vector<uint64_t>& marks);

}  // namespace of::runtime
