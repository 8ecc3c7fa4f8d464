// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/thread_workspace.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace of::kernels::cpu {
namespace {

// The most any kernel made so far needs: what each thread's workspace grows to.
std::atomic<size_t> workspace_needed{0};

struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
  ~Workspace() { std::free(data); }
};

}  // namespace

void reserve_thread_workspace(size_t bytes) {
  bytes = (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  size_t most = workspace_needed.load(std::memory_order_relaxed);
  while (most < bytes && !workspace_needed.compare_exchange_weak(most, bytes, std::memory_order_relaxed)) {
  }
}

void* thread_workspace() {
  thread_local Workspace w;
  const size_t need = workspace_needed.load(std::memory_order_relaxed);
  if (w.bytes < need) {
    std::free(w.data);
    w.data = std::aligned_alloc(kWorkspaceAlignment, need);
    if (!w.data) throw std::bad_alloc();
    w.bytes = need;
  }
  return w.data;
}

}  // namespace of::kernels::cpu
