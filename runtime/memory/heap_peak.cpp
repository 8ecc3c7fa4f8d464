// SPDX-License-Identifier: Apache-2.0
#include "runtime/memory/heap_peak.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>

namespace of::runtime {

uint64_t heap_in_use() {
  const struct mallinfo2 m = ::mallinfo2();
  return uint64_t(m.uordblks) + uint64_t(m.hblkhd);
}

bool heap_counted() {
  // A running process always has heap in use (this very process's strings, CAF, protobuf).
  return heap_in_use() > 0;
}

HeapPeakSampler::HeapPeakSampler() : peak_(heap_in_use()) {
  thread_ = std::thread([this] {
    while (running_.load(std::memory_order_relaxed)) {
      const uint64_t now = heap_in_use();
      uint64_t seen = peak_.load(std::memory_order_relaxed);
      while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
}

HeapPeakSampler::~HeapPeakSampler() { stop(); }

uint64_t HeapPeakSampler::stop() {
  if (thread_.joinable()) {
    running_.store(false, std::memory_order_relaxed);
    thread_.join();
  }
  const uint64_t now = heap_in_use();
  return std::max(peak_.load(std::memory_order_relaxed), now);
}

}  // namespace of::runtime
