// SPDX-License-Identifier: Apache-2.0
// Training checkpoints. A checkpoint directory holds one folder per saved step plus a pointer:
//
//   DIR/step-00000120/model.safetensors      trained weights, PyTorch parameter names
//   DIR/step-00000120/optimizer.safetensors  optimizer state ("<weight>.momentum_buffer", ...)
//   DIR/step-00000120/state.json             step, epoch, data position, seed; each file's size + CRC
//   DIR/latest                               "step-00000120": the newest complete checkpoint
//
// A plan of several ranks checkpoints in shards, one per snapshot task (each rank writes the
// tensors it holds: plan_instance.h's StoredTensor::shard), as Hugging Face shards a model:
//
//   DIR/step-00000120/model-00001-of-00002.safetensors     each tensor whole in one shard
//   DIR/step-00000120/model.safetensors.index.json         {"metadata": {"total_size": N},
//                                                          "weight_map": {tensor: shard file}}
//   DIR/step-00000120/optimizer-00001-of-00002.safetensors (and its index), state.json
//
// A save writes a hidden ".partial-step-*" folder (every file fsynced); each shard but the first
// ends with a marker naming its files, sizes, CRCs and tensors; the first shard's writer waits
// for every marker, writes the indexes and state.json, renames the folder into place, then
// replaces `latest` atomically. Killed at any moment, on any rank, DIR still names a complete
// checkpoint (the previous one until the new one is whole). Which folders stay, and who may write
// DIR at all, is checkpoint_dir.h's business.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/safetensors.h"
#include "runtime/plan_instance.h"

namespace of::runtime::train {

struct CheckpointState {
  int64_t step = 0;    // optimizer steps done
  int64_t pieces = 0;  // pieces (micro-batches) consumed: the data position
  int64_t epoch = 0;   // the epoch the next piece belongs to (0-based)
  uint64_t seed = 0;   // the sampler's seed
  int32_t micro_batches = 1;
  int64_t batch = 1;
  std::string model;   // the plan's model name
  std::string data;    // the --data spec trained on
};

// One checkpoint shard's two files as bytes, laid out once for a plan instance (the safetensors
// headers depend only on the tensors' names, dtypes and shapes), so that a save copies each tensor
// into place and allocates nothing. model(): the shard's state_dict tensors (trained, frozen,
// running statistics, buffers); optimizer(): the rest of its persistent state. Shard k is what
// snapshot task k reads: the tensors it writes whole (its own rank's boxes of them; boxes other
// shards hold arrive as pieces when the checkpoint is written), and the boxes it hands to other
// shards' writers (pieces(j): a safetensors file of boxes named "tensor@begin", for shard j).
class CheckpointImage {
 public:
  CheckpointImage(const PlanInstance& inst, int32_t shard = 0);
  // Copies every tensor's current value into place (the caller guarantees nobody writes them).
  void stage();
  int32_t shard() const { return shard_; }
  int32_t shards() const { return shards_; }
  const std::vector<uint8_t>& model() const { return files_[0]; }
  const std::vector<uint8_t>& optimizer() const { return files_[1]; }
  const std::vector<std::string>& model_keys() const { return keys_[0]; }
  const std::vector<std::string>& optimizer_keys() const { return keys_[1]; }
  uint64_t model_data_bytes() const { return data_bytes_[0]; }
  uint64_t optimizer_data_bytes() const { return data_bytes_[1]; }
  // The boxes this shard hands to shard j (empty: none).
  const std::vector<uint8_t>& pieces(int32_t j) const { return pieces_[size_t(j)]; }
  // The shards that hand this one boxes.
  const std::vector<int32_t>& from_shards() const { return from_; }
  // Copies the boxes of `file` (shard j's pieces for this one, named `path` in errors) into the
  // staged tensors; fails unless it holds exactly the boxes the plan says j hands here.
  void add_pieces(const SafetensorsFile& file, int32_t j, const std::string& path);

 private:
  struct Place {  // a box of this process, copied into a staged file
    const uint8_t* from;
    Shape shape;
    std::vector<int64_t> begin;
    Shape whole;  // shape of what it lands in (the box itself for a piece)
    size_t element;
    uint8_t* at;
    bool gpu = false;  // `from` is GPU memory, staged through `staged` (sized once, here)
    std::vector<uint8_t> staged = {};
  };
  struct Whole {  // a tensor this shard writes whole, where it lies in its file
    const StoredTensor* tensor;
    uint8_t* at;
  };
  struct Expected {  // a box another shard hands this one
    int32_t from;
    std::string name;
    const StoredTensor* tensor;
    std::vector<int64_t> begin;
    Shape shape;
  };
  int32_t shard_ = 0, shards_ = 1;
  std::vector<uint8_t> files_[2];
  std::vector<std::vector<uint8_t>> pieces_;
  std::vector<std::string> keys_[2];
  uint64_t data_bytes_[2] = {0, 0};
  std::vector<Whole> constants_;  // gathered whole (they never change)
  std::vector<Place> places_;     // copied in reverse: a replica's first box is the one that stays
  std::vector<Expected> expected_;
  std::vector<int32_t> from_;
  std::vector<std::pair<const StoredTensor*, uint8_t*>> wholes_;  // every tensor of the shard: where it lies
};

// The file names of shard k of n ("model.safetensors" when n == 1).
std::string shard_file(const char* kind, int32_t k, int32_t n);

// Writes a shard other than the first into DIR's partial folder of `state`'s step: the boxes it
// hands to other shards' writers, then (once the boxes handed to it are in: waiting as below)
// its two files, then its marker. The first shard's writer commits the checkpoint (commit_checkpoint).
void write_checkpoint_shard(const std::string& dir, CheckpointImage& image, const CheckpointState& state,
                            const std::function<bool()>& abandoned = {}, double timeout_s = 1800);
// Hands and takes boxes as write_checkpoint_shard does, writes the first shard, waits until every
// other shard's marker is there (polling; `abandoned`
// returning true, or `timeout_s` seconds, stops the wait with of::Error naming the missing shard),
// writes the indexes and state.json, moves the folder into place and points `latest` at it.
// Returns the new checkpoint folder. With one shard, nothing is waited for.
std::string commit_checkpoint(const std::string& dir, CheckpointImage& first, const CheckpointState& state,
                              const std::function<bool()>& abandoned = {}, double timeout_s = 1800);
// A checkpoint of one shard: commit_checkpoint.
inline std::string save_checkpoint(const std::string& dir, CheckpointImage& image, const CheckpointState& state) {
  return commit_checkpoint(dir, image, state);
}

struct LoadedCheckpoint {
  std::string folder;
  CheckpointState state;
  // Every shard's tensors in one (a checkpoint of one shard: its file); model_path and
  // optimizer_path name the file or index they came from, for errors.
  SafetensorsFile model;
  SafetensorsFile optimizer;
  std::string model_path, optimizer_path;
};

// The checkpoint `latest` names, verified (JSON fields, file sizes and CRCs, safetensors headers,
// the indexes of a sharded one against its shards).
// Throws of::Error naming the file and field that is wrong.
LoadedCheckpoint load_latest_checkpoint(const std::string& dir);
// Whether DIR has a `latest` pointer at all.
bool has_checkpoint(const std::string& dir);
// The step folder `latest` names ("" without a pointer); throws of::Error if it names none.
std::string latest_name(const std::string& dir);
// DIR's "step-*" folder names, sorted.
std::vector<std::string> step_folders(const std::string& dir);

}  // namespace of::runtime::train
