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
  bool from_f64 = false;      // the file held float64 (numpy's default), converted to f32
};

// With `f64_as_f32`, a float64 array (<f8) is read as f32 (a value beyond float32's range is
// refused by flat index) and from_f64 says so; without it float64 is refused.
NpyArray read_npy(const std::string& path, bool f64_as_f32 = false);
// Parses an in-memory .npy image; `path` only names it in errors.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& path, bool f64_as_f32 = false);
void write_npy(const std::string& path, DType dtype, const Shape& shape, const void* data);

}  // namespace of
