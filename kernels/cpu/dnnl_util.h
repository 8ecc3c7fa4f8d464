// SPDX-License-Identifier: Apache-2.0
// What the oneDNN-primitive kernels (gemm_packed.cpp, conv_dnnl.cpp, conv_grad_dnnl.cpp) share:
// the CPU engine, primitive attributes (user-owned scratchpad), packing a constant weight once
// into the layout a primitive chose, and a sequence of primitives with their arguments bound at
// prepare time. Included only by those kernels.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <vector>

#include "kernels/kernel.h"

namespace of::kernels::cpu {

const dnnl::engine& cpu_engine();

// Scratchpad owned by the kernel (so run() allocates nothing). No ReLU post-op: oneDNN's
// eltwise_relu maps NaN to 0, so fused ReLUs run after the primitive (relu_inplace).
dnnl::primitive_attr primitive_attr();

// A new buffer in `packed` layout holding the weight at `data` (in `user` layout).
dnnl::memory pack_weights(const dnnl::memory::desc& user, const void* data, const dnnl::memory::desc& packed);

// A user buffer of `md` whose data handle run() sets per act (user_memory(md).get() is the
// handle dnnl_memory_set_data_handle takes).
dnnl::memory user_memory(const dnnl::memory::desc& md);

// Primitives run in order on one stream, each with its arguments bound once: reorders of inputs
// into the layouts a primitive chose, the primitive, reorders of its outputs back. run() goes
// through the C API with preset argument arrays.
//
// The buffers that live only within one run() (reordered copies, scratchpads) are not the
// kernel's own: they lie in the act's workspace (thread_workspace.h; measured on the
// benchmarks' CNN: oneDNN held 9.7 MB of these buffers in its kernels). run() only rebinds the
// handles when the workspace moved since the last act.
class DnnlSequence {
 public:
  DnnlSequence();
  // The buffer the primitive reads: `user` when `chosen` is its layout, else a kernel-owned one
  // that a reorder from `user` fills before the later steps.
  dnnl::memory input(const dnnl::memory& user, const dnnl::memory::desc& chosen);
  // The buffer the primitive writes: `user`, or a kernel-owned one reordered into `user` after
  // every step added with add().
  dnnl::memory output(const dnnl::memory& user, const dnnl::memory::desc& chosen);
  // Keeps `m` alive as long as the sequence (a packed constant weight its steps read).
  const dnnl::memory& keep(dnnl::memory m);
  // `args` without the scratchpad, which lies in the workspace, sized by `scratchpad`.
  void add(const dnnl::primitive& prim, std::vector<dnnl_exec_arg_t> args, const dnnl::memory::desc& scratchpad);
  // The workspace one run() takes (the kernel's Kernel::workspace_bytes()).
  size_t workspace_bytes() const { return workspace_bytes_; }
  void run(const RunCtx& ctx);
  // With the workspace at `base` (workspace_bytes() there, aligned), for a kernel that keeps
  // more of its own scratch after it.
  void run(void* base);

 private:
  struct Step {
    dnnl::primitive prim;
    std::vector<dnnl_exec_arg_t> args;
    dnnl::memory scratchpad;
  };
  Step reorder(const dnnl::memory& from, const dnnl::memory& to);
  // A buffer of `md` in the workspace, at the next free offset.
  dnnl::memory transient(const dnnl::memory::desc& md);

  dnnl::stream stream_;
  std::vector<Step> steps_;
  std::vector<Step> after_;  // output reorders, run after steps_
  std::vector<dnnl::memory> owned_;  // kept buffers and the reordered copies the steps' raw arguments point at
  std::vector<std::pair<dnnl::memory, size_t>> transients_;  // workspace buffers and their offsets
  size_t workspace_bytes_ = 0;
  void* bound_ = nullptr;  // the workspace the transients point into now
};

}  // namespace of::kernels::cpu
