// SPDX-License-Identifier: Apache-2.0
// How much of each device's arena a run really touched, measured, not computed from the plan:
// with ofrun --memory-report the arenas start filled with kCanary instead of zeros, and after the
// run the mark is one past the highest byte that differs from it. It is compared with what the
// plan promised (ofdump --memory's peak): equal up to the padding at the end of the highest
// buffer (a byte written with the canary's value there reads as untouched).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemas/plan_model.h"

namespace of::runtime {

inline constexpr uint8_t kCanary = 0xCB;

// Per arena: one past the highest byte not kCanary (0 for another rank's, whose pointer is null).
std::vector<uint64_t> arena_high_water(const plan::Plan& p, uint8_t* const* arenas);

// "ofrun: arena high-water mark: cpu:0 123 bytes, cpu:1 456 bytes"; `unmeasured` arenas (GPU
// memory, not read back) say so instead.
std::string high_water_line(const plan::Plan& p, const std::vector<uint64_t>& marks, const std::vector<bool>& unmeasured = {});

}  // namespace of::runtime
