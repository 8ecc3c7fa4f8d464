// SPDX-License-Identifier: Apache-2.0
// The launch shape of the element-wise kernels: 256 threads a block and at most 65536 blocks,
// each thread walking the index space with a grid-stride loop (so any size fits one launch).
#pragma once

#include <cstdint>

namespace of::kernels::cuda {

inline constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536 ? b : 65536);
}

__device__ inline int64_t first_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

}  // namespace of::kernels::cuda
