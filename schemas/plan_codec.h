// SPDX-License-Identifier: Apache-2.0
// Plan files to and from plan::Plan: the one place that includes the generated FlatBuffers code.
// decode() trusts nothing: it checks the framing (magic, size, CRC-32, version), runs the
// FlatBuffers verifier, and reports any missing field by name. Semantic checks (ids in range,
// offsets inside arenas, kernels known) are the runtime's verifier's job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemas/plan_model.h"

namespace of::plan {

std::vector<uint8_t> encode(const Plan& plan);
// `path` names the file in errors.
Plan decode(const uint8_t* bytes, size_t size, const std::string& path);

}  // namespace of::plan
