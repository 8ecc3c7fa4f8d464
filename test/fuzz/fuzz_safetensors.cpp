// SPDX-License-Identifier: Apache-2.0
// Weights/checkpoint bytes -> the safetensors reader; and whatever it accepts, serialized again
// with SafetensorsWriter and parsed, must hold the same tensors (names, dtypes, shapes, bytes).
#include <cstring>

#include "common/error.h"
#include "common/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  of::SafetensorsFile f;
  try {
    f = of::parse_safetensors(data, size, "fuzz.safetensors");
  } catch (const of::Error&) {
    return 0;
  }
  of::SafetensorsWriter w;
  for (const auto& [name, e] : f.entries) {
    if (e.bytes) (void)*(volatile const uint8_t*)(f.ptr(e) + e.bytes - 1);  // ASan checks the bound
    w.add(name, e.dtype, e.shape, f.ptr(e));
  }
  of::SafetensorsFile g;
  try {
    const std::vector<uint8_t> bytes = w.serialize();
    g = of::parse_safetensors(bytes.data(), bytes.size(), "round-trip.safetensors");
  } catch (const of::Error&) {
    __builtin_trap();  // what the reader accepted, the writer and reader must take back
  }
  if (g.entries.size() != f.entries.size()) __builtin_trap();
  for (const auto& [name, e] : f.entries) {
    auto it = g.entries.find(name);
    if (it == g.entries.end()) __builtin_trap();
    const of::SafetensorsEntry& x = it->second;
    if (x.dtype != e.dtype || x.shape != e.shape || x.bytes != e.bytes) __builtin_trap();
    if (e.bytes && std::memcmp(g.ptr(x), f.ptr(e), e.bytes) != 0) __builtin_trap();
  }
  return 0;
}
