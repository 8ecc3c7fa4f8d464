// SPDX-License-Identifier: Apache-2.0
#include "runtime/actors/actions.h"

#include <cstring>

#include "kernels/registry.h"

namespace of::runtime {

void KernelAction::act(int64_t piece, const void* const* in, void* const* out) {
  // Actors migrate between worker threads; the OpenMP limit is per thread, so set it where we run.
  thread_local int threads_set = 0;
  if (threads_set != kernel_threads_) {
    kernels::set_kernel_threads(kernel_threads_);
    threads_set = kernel_threads_;
  }
  kernels::RunCtx ctx{.piece = base_.piece + piece, .seed = base_.seed, .stream = base_.stream};
  if (!rooms_.at.empty()) {
    const void* arg = rooms_.output ? out[rooms_.arg] : in[rooms_.arg];
    for (size_t s = 0; s < rooms_.at.size(); ++s)
      if (rooms_.at[s] == arg) ctx.workspace = rooms_.room[s];
  }
  kernel_->run(ctx, in, out);
}

void SourceAction::act(int64_t piece, const void* const*, void* const* out) {
  for (size_t i = 0; i < feeds_.size(); ++i) {
    const Feed& f = feeds_[i];
    std::memcpy(out[i], f.data + uint64_t(piece % f.pieces) * f.piece_bytes + f.begin, f.bytes);
  }
}

void TransferAction::act(int64_t, const void* const* in, void* const* out) {
  for (size_t i = 0; i < blob_bytes_.size(); ++i) std::memcpy(out[i], in[i], blob_bytes_[i]);
}

void SinkAction::act(int64_t piece, const void* const* in, void* const*) {
  for (size_t i = 0; i < collect_.size(); ++i) {
    const Collect& c = collect_[i];
    if (c.data && piece < c.pieces) std::memcpy(c.data + uint64_t(piece) * c.piece_bytes, in[i], c.piece_bytes);
  }
}

}  // namespace of::runtime
