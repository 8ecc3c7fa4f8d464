// SPDX-License-Identifier: Apache-2.0
// NumPy .npy arrays (format versions 1-3, little-endian, C order): the files users feed to and
// get from ofrun. Untrusted input: the header is parsed strictly and the declared size must be
// exactly what the file holds before anything is allocated for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/shape.h"

namespace of {

struct NpyArray {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<uint8_t> data;  // numel(shape) * dtype_size(dtype) bytes
};

NpyArray read_npy(const std::string& path);
// Parses an in-memory .npy image; `path` only names it in errors.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& path);
void write_npy(const std::string& path, DType dtype, const Shape& shape, const void* data);

}  // namespace of
