// SPDX-License-Identifier: Apache-2.0
// What a run holds in the heap beyond its arenas, measured (ofrun --memory-report): the arenas
// are what the plan promised, but kernels' scratch, the actors' mailboxes, the data loader's
// batches and the weights' copies live outside them. glibc's bytes in use (mallinfo2: the heap
// plus mmapped blocks, where the arenas are) are read before the plan loads and then sampled on a
// thread of their own while the actors run; the highest sample less the first is what the run
// holds, arenas included. That is the count benchmarks/bench_memory.py puts next to PyTorch's
// (measured the same way, less what was in use before the model was built).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace of::runtime {

// glibc's bytes in use now: allocated heap chunks plus mmapped blocks.
uint64_t heap_in_use();
// Whether heap_in_use() counts anything: false where malloc is not glibc's (ASan's allocator
// answers mallinfo2 with zeros), so a report says "not measured" instead of a wrong 0.
bool heap_counted();

// Samples heap_in_use() every millisecond between construction and stop(), off the actors'
// path (the sampler takes malloc's locks; no actor waits for it).
class HeapPeakSampler {
 public:
  HeapPeakSampler();
  ~HeapPeakSampler();
  HeapPeakSampler(const HeapPeakSampler&) = delete;
  HeapPeakSampler& operator=(const HeapPeakSampler&) = delete;
  // Stops sampling; the highest sample taken (at least one, now).
  uint64_t stop();

 private:
  std::atomic<bool> running_{true};
  std::atomic<uint64_t> peak_{0};
  std::thread thread_;
};

}  // namespace of::runtime
