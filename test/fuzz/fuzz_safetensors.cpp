// SPDX-License-Identifier: Apache-2.0
// Weights/checkpoint bytes -> the safetensors reader.
#include "common/error.h"
#include "common/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    of::SafetensorsFile f = of::parse_safetensors(data, size, "fuzz.safetensors");
    for (const auto& [name, e] : f.entries)
      if (e.bytes) (void)*(volatile const uint8_t*)(f.ptr(e) + e.bytes - 1);  // ASan checks the bound
  } catch (const of::Error&) {
  }
  return 0;
}
