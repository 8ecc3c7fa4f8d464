// SPDX-License-Identifier: Apache-2.0
// Loading a plan for execution: decode (framing, checksum, FlatBuffers verifier) and then the
// semantic checks, so that nothing downstream indexes out of range or writes outside an arena.
#pragma once

#include <string>

#include "schemas/plan_model.h"

namespace of::runtime {

plan::Plan load_plan(const std::string& path);

// This machine's physical memory in bytes (the bound for arenas and run-sized buffers).
uint64_t physical_memory();

// Throws of::Error naming the file and the first offending field.
void verify_plan(const plan::Plan& p, const std::string& path);

}  // namespace of::runtime
