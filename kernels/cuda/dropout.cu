// SPDX-License-Identifier: Apache-2.0
// dropout on the GPU: one thread per element, each drawing its word of the Philox block its
// element falls in (kernels/philox.h, the CPU twin's generator and counters): the same mask.
#include <cstdint>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/philox.h"

namespace of::kernels::cuda {

namespace {

__global__ void dropout_kernel(const float* x, float* y, int64_t n, int64_t offset, uint32_t k0, uint32_t k1, uint64_t piece,
                               uint32_t threshold, float scale) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const auto global = uint64_t(offset + i);
    const uint64_t block = global / 4;
    const Philox4x32 r = philox(Philox4x32{{uint32_t(block), uint32_t(block >> 32), uint32_t(piece), uint32_t(piece >> 32)}}, k0, k1);
    y[i] = (r.c[global % 4] >> 8) >= threshold ? x[i] * scale : 0.0f;
  }
}

}  // namespace

void launch_dropout(const float* x, float* y, int64_t n, int64_t offset, uint32_t k0, uint32_t k1, uint64_t piece, uint32_t threshold,
                    float scale, cudaStream_t stream) {
  if (n > 0) dropout_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, offset, k0, k1, piece, threshold, scale);
}

}  // namespace of::kernels::cuda
