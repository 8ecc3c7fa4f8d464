// SPDX-License-Identifier: Apache-2.0
// random on the GPU: one thread per element (grid-stride), each drawing as the CPU twin does.
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void random_kernel(RandomGeometry g, float* y, uint64_t piece, uint32_t k0, uint32_t k1) {
  for (int64_t i = first_index(); i < g.n; i += grid_stride()) y[i] = random_at(g, uint64_t(i), piece, k0, k1);
}

}  // namespace

void launch_random(const RandomGeometry& g, float* y, uint64_t piece, uint32_t k0, uint32_t k1, cudaStream_t stream) {
  if (g.n > 0) random_kernel<<<blocks_for(g.n), kThreads, 0, stream>>>(g, y, piece, k0, k1);
}

}  // namespace of::kernels::cuda
