// SPDX-License-Identifier: Apache-2.0
#include "runtime/thread_counts.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace of::runtime {

ThreadCounts thread_counts(const plan::Plan& p, bool training, int32_t rank, int threads, int kernel_threads, int cores) {
  cores = std::max(1, cores);
  const bool one_cpu_device = p.devices.size() == 1 && p.devices[0].kind == 0;
  if (training && threads == 0 && kernel_threads == 0 && one_cpu_device && rank < 0) return ThreadCounts{1, cores};
  return ThreadCounts{threads > 0 ? threads : cores, kernel_threads > 0 ? kernel_threads : 1};
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace of::runtime
