// SPDX-License-Identifier: Apache-2.0
// The plan file's outer framing, shared by writer and loader: a fixed header in front of the
// FlatBuffer, because the FlatBuffers verifier does not notice changed scalar values.
#pragma once

#include <cstdint>

namespace of::plan_format {

inline constexpr char kMagic[8] = {'O', 'F', 'P', 'L', 'A', 'N', '\0', '\0'};
inline constexpr uint32_t kVersion = 7;  // 4: transfer tasks; 5: collective tasks; 6: Task.once_per_version; 7: copies
inline constexpr size_t kHeaderBytes = 24;  // magic | u64 size | u32 crc32 | u32 version

}  // namespace of::plan_format
