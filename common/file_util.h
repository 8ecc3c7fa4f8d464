// SPDX-License-Identifier: Apache-2.0
// Whole-file reads with errors that name the file, atomic writes (temporary file, fsync,
// rename: a reader never sees half a file), and the checksum plans and weights carry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace of {

std::vector<uint8_t> read_file(const std::string& path);
void write_file_atomic(const std::string& path, const void* data, size_t size);
inline void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file_atomic(path, bytes.data(), bytes.size());
}
uint32_t crc32_of(const void* data, size_t size);

}  // namespace of
