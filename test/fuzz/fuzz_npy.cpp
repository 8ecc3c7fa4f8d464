// SPDX-License-Identifier: Apache-2.0
// Input-array bytes -> the .npy reader.
#include "common/error.h"
#include "common/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    of::NpyArray a = of::parse_npy(data, size, "fuzz.npy");
    if (a.data.size() != size_t(of::numel(a.shape) * of::dtype_size(a.dtype))) __builtin_trap();
  } catch (const of::Error&) {
  }
  return 0;
}
