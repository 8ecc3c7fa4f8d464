// SPDX-License-Identifier: Apache-2.0
// How CPU kernels share their work between the kernel threads (ofrun --kernel-threads: OpenMP's
// team, omp_set_num_threads in set_kernel_threads). Element-wise kernels split their elements,
// pooling its planes, batch norm its channels: independent pieces, each computed as on one
// thread, so the results are the same bits on any number of threads.
#pragma once

#include <cstdint>

namespace of::kernels::cpu {

// Element-wise work of at least this many elements is split (contiguous runs): below it,
// waking the threads costs more than the halves save.
inline constexpr int64_t kParallelElements = 32 * 1024;

}  // namespace of::kernels::cpu
