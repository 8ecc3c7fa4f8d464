// SPDX-License-Identifier: Apache-2.0
// gather and gather_grad on the GPU (the CPU twin: kernels/cpu/gather.cpp). The gradient is
// deterministic: one thread per (outer, column) walks the indices in order and adds into its own
// column of the rows they name, so every element sums in the CPU twin's order, with no atomics.
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

template <class I>
__device__ inline int64_t index_at(const I* indices, int64_t i, int64_t vocab) {
  const int64_t v = int64_t(indices[i]);
  return v < 0 ? v + vocab : v;
}

template <class I>
__global__ void gather_kernel(const float* table, const I* indices, float* y, int64_t outer, int64_t vocab, int64_t row,
                              int64_t count) {
  const int64_t total = outer * count * row;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t k = e % row, i = (e / row) % count, a = e / (row * count);
    const int64_t v = index_at(indices, i, vocab);
    y[e] = v >= 0 && v < vocab ? table[(a * vocab + v) * row + k] : 0.0f;
  }
}

template <class I>
__global__ void gather_grad_kernel(const float* dy, const I* indices, float* dtable, int64_t outer, int64_t vocab,
                                   int64_t row, int64_t count, int64_t padding) {
  const int64_t columns = outer * row;
  for (int64_t c = first_index(); c < columns; c += grid_stride()) {
    const int64_t a = c / row, k = c % row;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = index_at(indices, i, vocab);
      if (v >= 0 && v < vocab && v != padding) dtable[(a * vocab + v) * row + k] += dy[(a * count + i) * row + k];
    }
  }
}

}  // namespace

void launch_gather(const float* table, const void* indices, bool wide, float* y, int64_t outer, int64_t vocab,
                   int64_t row, int64_t count, cudaStream_t stream) {
  const int64_t total = outer * count * row;
  if (total <= 0) return;
  if (wide)
    gather_kernel<<<blocks_for(total), kThreads, 0, stream>>>(table, static_cast<const int64_t*>(indices), y, outer,
                                                              vocab, row, count);
  else
    gather_kernel<<<blocks_for(total), kThreads, 0, stream>>>(table, static_cast<const int32_t*>(indices), y, outer,
                                                              vocab, row, count);
}

void launch_gather_grad(const float* dy, const void* indices, bool wide, float* dtable, int64_t outer, int64_t vocab,
                        int64_t row, int64_t count, int64_t padding, cudaStream_t stream) {
  const int64_t table = outer * vocab * row;
  if (table <= 0) return;
  cudaMemsetAsync(dtable, 0, size_t(table) * sizeof(float), stream);
  const int64_t columns = outer * row;
  if (wide)
    gather_grad_kernel<<<blocks_for(columns), kThreads, 0, stream>>>(dy, static_cast<const int64_t*>(indices), dtable,
                                                                     outer, vocab, row, count, padding);
  else
    gather_grad_kernel<<<blocks_for(columns), kThreads, 0, stream>>>(dy, static_cast<const int32_t*>(indices), dtable,
                                                                     outer, vocab, row, count, padding);
}

}  // namespace of::kernels::cuda
