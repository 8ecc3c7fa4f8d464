// SPDX-License-Identifier: Apache-2.0
// What each kind of task does per piece: run a prepared kernel, copy a piece in from fed
// inputs (source), or copy a piece out to collected outputs (sink). All buffers are sized
// before the run starts; act() only copies and computes.
#pragma once

#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "runtime/actors/protocol.h"

namespace of::runtime {

// Where a kernel's acts keep their scratch (RunCtx::workspace) when the plan has room for it
// (plan::scratch_room): per slot of the task's share group, the address one of the task's
// arguments has in that slot, and the room in that slot. An act finds its slot by that
// argument's address. Empty: the thread's workspace.
struct ScratchRooms {
  bool output = false;  // the argument is out[arg], else in[arg]
  size_t arg = 0;
  std::vector<const void*> at;
  std::vector<void*> room;
};

// `base`: the run's seed and the index of its first piece (a resumed run's steps times its
// micro-batches), so that kernels see the piece's index in the whole training run.
class KernelAction final : public Action {
 public:
  KernelAction(std::unique_ptr<kernels::Kernel> kernel, int kernel_threads, kernels::RunCtx base = {}, ScratchRooms rooms = {})
      : kernel_(std::move(kernel)), kernel_threads_(kernel_threads), base_(base), rooms_(std::move(rooms)) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;

 private:
  std::unique_ptr<kernels::Kernel> kernel_;
  int kernel_threads_;
  kernels::RunCtx base_;
  ScratchRooms rooms_;
};

// Piece p of blob i is bytes [(p % pieces_i) * piece_bytes_i + begin_i, + bytes_i) of feeds[i]
// (the whole piece, or a rank's rows of it): a feed holding k pieces is streamed round and round
// when more pieces are asked for.
class SourceAction final : public Action {
 public:
  struct Feed {
    const uint8_t* data;
    int64_t pieces;       // how many pieces the feed holds
    uint64_t piece_bytes;  // of the whole input
    // The window of each piece this source holds (a rank's rows): [begin, begin + bytes).
    uint64_t begin = 0, bytes = 0;
  };
  explicit SourceAction(std::vector<Feed> feeds) : feeds_(std::move(feeds)) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;

 private:
  std::vector<Feed> feeds_;
};

// A transfer task in one process: input i (a tensor of the other device's register) is copied into
// output blob i (ranks: the transport moves those bytes instead).
class TransferAction final : public Action {
 public:
  explicit TransferAction(std::vector<uint64_t> blob_bytes) : blob_bytes_(std::move(blob_bytes)) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;

 private:
  std::vector<uint64_t> blob_bytes_;
};

// Copies input i of piece p to collect[i] + p * piece_bytes_i (when collect[i] is not null).
class SinkAction final : public Action {
 public:
  struct Collect {
    uint8_t* data;        // null: output not requested
    int64_t pieces;       // capacity in pieces
    uint64_t piece_bytes;
  };
  explicit SinkAction(std::vector<Collect> collect) : collect_(std::move(collect)) {}
  void act(int64_t piece, const void* const* in, void* const* out) override;

 private:
  std::vector<Collect> collect_;
};

}  // namespace of::runtime
