// SPDX-License-Identifier: Apache-2.0
// Scratch a CPU kernel uses only within one act (oneDNN's reordered copies and scratchpads,
// im2col's column matrix) lies where the runtime found room for it in the arena (RunCtx::
// workspace: bytes of the task's share group nothing else uses while it acts), or else in its
// thread's workspace, one buffer per thread as large as the largest act it ran needed, not in each
// kernel: a model's many convolutions then hold one act's scratch per thread, not the sum of all
// of them (measured on the benchmarks' resnet18: 15 MB of im2col columns, on top of oneDNN's
// 13 MB). Kernels do not nest, so one act at a time uses a thread's workspace.
#pragma once

#include <cstddef>

#include "kernels/kernel.h"

namespace of::kernels::cpu {

// The byte alignment of a workspace (and what callers round their parts up to).
inline constexpr size_t kWorkspaceAlignment = 64;

// This thread's workspace, at least `bytes` long: it grows (once per new largest size, so in a
// thread's first acts only) and otherwise stays where it is. Valid until this thread's next call
// with more bytes, so an act takes it once.
void* thread_workspace(size_t bytes);

// The scratch of one act that needs `bytes`: the room the runtime gave it, else the thread's.
inline void* act_workspace(const RunCtx& ctx, size_t bytes) { return ctx.workspace ? ctx.workspace : thread_workspace(bytes); }

}  // namespace of::kernels::cpu
