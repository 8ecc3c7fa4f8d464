// SPDX-License-Identifier: Apache-2.0
// How many actor workers ofrun starts and how many threads each kernel may use, when the user
// gives neither (--threads, --kernel-threads).
#pragma once

#include <cstdint>

#include "schemas/plan_model.h"

namespace of::runtime {

struct ThreadCounts {
  int workers = 1;  // actor worker threads (SchedulerOptions::threads)
  int kernel = 1;   // OpenMP threads inside a kernel (oneDNN's products and convolutions)
};

// `threads` and `kernel_threads` as given, 0 where not. Training a plan of one CPU device as one
// process gets one worker whose kernels use every core: a step's tasks mostly run one after
// another (the next step's forward waits for this one's updates), so a second worker would idle
// while the first's kernel could have used its core (measured with bench_train.py on 2 cores
// with the previous kernels: the MLP trained 1.4x as fast, the CNN 1.24x, resnet18 1.19x, the
// GPT, whose branches a second worker runs beside, 0.92x). Anything else gets one worker per
// core and one thread per kernel, unless given: inference, whose pieces stream through the
// stages and workers overlap them (the MLP infers ~1.4x faster on two workers), several devices
// (they already share the cores), GPUs, a rank of a multi-process run (it may share its machine).
ThreadCounts thread_counts(const plan::Plan& p, bool training, int32_t rank, int threads, int kernel_threads, int cores);

// The cores this process may run on (its CPU affinity), at least 1.
int usable_cores();

}  // namespace of::runtime
