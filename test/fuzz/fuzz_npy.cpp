// SPDX-License-Identifier: Apache-2.0
// Input-array bytes -> the .npy reader; and whatever it accepts, written back with write_npy and
// read again, must be the same array (dtype, shape, bytes).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/error.h"
#include "common/npy.h"

namespace {

void round_trip(const of::NpyArray& a) {
  static const std::string path = "/tmp/of_fuzz_npy." + std::to_string(::getpid()) + ".npy";
  of::write_npy(path, a.dtype, a.shape, a.data.data());
  of::NpyArray b = of::read_npy(path);  // an of::Error here is a finding too: rethrown below
  std::remove(path.c_str());
  if (b.dtype != a.dtype || b.shape != a.shape || b.data != a.data) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool f64_as_f32 : {false, true}) {
    of::NpyArray a;
    try {
      a = of::parse_npy(data, size, "fuzz.npy", f64_as_f32);
    } catch (const of::Error&) {
      continue;
    }
    if (a.data.size() != size_t(of::numel(a.shape) * of::dtype_size(a.dtype))) __builtin_trap();
    try {
      round_trip(a);
    } catch (const of::Error&) {
      __builtin_trap();  // what the reader accepted, the writer and reader must take back
    }
  }
  return 0;
}
