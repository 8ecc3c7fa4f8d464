// SPDX-License-Identifier: Apache-2.0
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011), the
// counter-based generator of PyTorch's CUDA backend: one definition for the CPU kernels and
// their CUDA twins (dropout, random), so that both draw the same numbers for the same counter and key.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels {

struct Philox4x32 {
  uint32_t c[4];
};

// Ten rounds of Philox4x32 on counter `ctr` with key (k0, k1).
OF_HOST_DEVICE inline Philox4x32 philox(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * ctr.c[0], p1 = uint64_t(kM1) * ctr.c[2];
    ctr = Philox4x32{{uint32_t(p1 >> 32) ^ ctr.c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ ctr.c[3] ^ k1, uint32_t(p0)}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

}  // namespace of::kernels
