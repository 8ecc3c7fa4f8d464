// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/thread_workspace.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace of::kernels::cpu {
namespace {

struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
  ~Workspace() { std::free(data); }
};

}  // namespace

void* thread_workspace(size_t bytes) {
  thread_local Workspace w;
  if (w.bytes < bytes || !w.data) {
    const size_t need = (std::max<size_t>(bytes, 1) + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
    std::free(w.data);
    w.data = std::aligned_alloc(kWorkspaceAlignment, need);
    if (!w.data) throw std::bad_alloc();
    w.bytes = need;
  }
  return w.data;
}

}  // namespace of::kernels::cpu
