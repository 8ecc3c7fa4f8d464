// SPDX-License-Identifier: Apache-2.0
// How CPU kernels share their work between the kernel threads (ofrun --kernel-threads: OpenMP's
// team, omp_set_num_threads in set_kernel_threads). Element-wise kernels split their elements,
// pooling its planes, batch norm its channels: independent pieces, each computed as on one
// thread, so the results are the same bits on any number of threads.
#pragma once

#include <omp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace of::kernels::cpu {

// Element-wise work of at least this many elements is split (contiguous runs): below it,
// waking the threads costs more than the halves save.
inline constexpr int64_t kParallelElements = 32 * 1024;

// How many threads split `units` pieces (rows, matrices, runs) of work on `elements`: the kernel
// threads from kParallelElements elements and two pieces, else one.
inline int split_threads(int64_t units, int64_t elements) {
  return units > 1 && elements >= kParallelElements ? omp_get_max_threads() : 1;
}

// Inside a parallel region: the calling thread's contiguous run [first, second) of `units`, the
// runs in thread order.
inline std::pair<int64_t, int64_t> thread_share(int64_t units) {
  const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
  return {units * t / team, units * (t + 1) / team};
}

// Where an odometer over dims[0..count) (the last of them fastest) stands after `at` steps: a
// thread's walk over the outer dims of a tensor starts there, at its first row.
template <size_t R>
std::array<int64_t, R> odometer_at(int64_t at, const std::array<int64_t, R>& dims, size_t count) {
  std::array<int64_t, R> idx{};
  for (size_t i = count; i-- > 0;) {
    idx[i] = at % dims[i];
    at /= dims[i];
  }
  return idx;
}

}  // namespace of::kernels::cpu
