// SPDX-License-Identifier: Apache-2.0
// Scratch a CPU kernel uses only within one act (oneDNN's reordered copies and scratchpads,
// im2col's column matrix) lies in its thread's workspace, one buffer per thread as large as the
// largest act needs, not in each kernel: a model's many convolutions then hold one act's scratch
// per thread, not the sum of all of them (measured on the benchmarks' resnet18: 15 MB of im2col
// columns, on top of oneDNN's 13 MB). Kernels do not nest, so one act at a time uses a thread's
// workspace.
#pragma once

#include <cstddef>

namespace of::kernels::cpu {

// The byte alignment of a workspace (and what callers round their parts up to).
inline constexpr size_t kWorkspaceAlignment = 64;

// Says that some kernel's act needs `bytes` of workspace; called when the kernel is made (all are
// made before the first act), so each thread's workspace is allocated once, at its first act.
void reserve_thread_workspace(size_t bytes);

// This thread's workspace, at least as large as every reservation so far. Valid until this
// thread's next call (a later, larger reservation moves it), so an act takes it once.
void* thread_workspace();

}  // namespace of::kernels::cpu
