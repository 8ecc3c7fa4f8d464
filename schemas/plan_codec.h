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

// What a decoded plan may hold in memory, by default: a file stores the tasks every device repeats
// once (schemas/plan_copies.h), so a small file can stand for a large plan, and a corrupt count of
// copies must fail before it is allocated. ofrun and ofdump pass half this machine's memory; the
// default is what tests and the plan fuzzer (whose memory is bounded) decode with.
inline constexpr uint64_t kDecodeMemoryLimit = uint64_t(64) << 20;

// `path` names the file in errors. A plan whose tasks, registers, tensors, variables, arenas and
// share groups would take more than `memory_limit` bytes is refused, however its file stores them.
Plan decode(const uint8_t* bytes, size_t size, const std::string& path, uint64_t memory_limit = kDecodeMemoryLimit);

}  // namespace of::plan
