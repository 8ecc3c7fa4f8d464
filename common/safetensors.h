// SPDX-License-Identifier: Apache-2.0
// The safetensors format (8-byte little-endian header length, a JSON header, raw data), used for
// the weights beside a plan and for checkpoints, so PyTorch can read them. Reading verifies
// every entry (dtype, shape, offsets inside the data, sizes that agree) before use.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/shape.h"

namespace of {

struct SafetensorsEntry {
  DType dtype = DType::f32;
  Shape shape;
  uint64_t offset = 0;  // into SafetensorsFile::data
  uint64_t bytes = 0;
};

struct SafetensorsFile {
  std::map<std::string, SafetensorsEntry> entries;
  // The data section from data_start on: the whole file when it was read or handed over, so
  // that its tensors are not copied (a model's weights are not held twice while they load).
  std::vector<uint8_t> bytes;
  uint64_t data_start = 0;
  const uint8_t* ptr(const SafetensorsEntry& e) const { return bytes.data() + data_start + e.offset; }
};

SafetensorsFile read_safetensors(const std::string& path);
// Copies the data section out of `bytes`.
SafetensorsFile parse_safetensors(const uint8_t* bytes, size_t size, const std::string& path);
// Keeps `bytes` (a whole file) as the data section.
SafetensorsFile parse_safetensors(std::vector<uint8_t>&& bytes, const std::string& path);

class SafetensorsWriter {
 public:
  // `data` must stay valid until write().
  void add(const std::string& name, DType dtype, const Shape& shape, const void* data);
  // Serializes in memory; write() stores it atomically.
  std::vector<uint8_t> serialize() const;
  // The file with its header and its data section zeroed, and (in `offsets`, one per add() in
  // order) where each tensor's bytes go in it: for callers that copy tensors into place later
  // (checkpoint images). The data pointers are not read.
  std::vector<uint8_t> layout(std::vector<uint64_t>* offsets) const;
  void write(const std::string& path) const;

 private:
  struct Item {
    std::string name;
    DType dtype;
    Shape shape;
    const void* data;
  };
  std::vector<Item> items_;
};

}  // namespace of
