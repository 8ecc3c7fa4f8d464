// SPDX-License-Identifier: Apache-2.0
// Training checkpoints. A checkpoint directory holds one folder per saved step plus a pointer:
//
//   DIR/step-00000120/model.safetensors      trained weights, PyTorch parameter names
//   DIR/step-00000120/optimizer.safetensors  optimizer state ("<weight>.momentum_buffer", ...)
//   DIR/step-00000120/state.json             step, epoch, data position, seed; each file's size + CRC
//   DIR/latest                               "step-00000120": the newest complete checkpoint
//
// A save writes a hidden ".partial-*" folder (every file fsynced), renames it into place, then
// replaces `latest` atomically. Killed at any moment, DIR still names a complete checkpoint (the
// previous one until the new one is whole). Which folders stay, and who may write DIR at all, is
// checkpoint_dir.h's business.
#pragma once

#include <cstdint>
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

// One checkpoint's two files as bytes, laid out once for a plan instance (the safetensors headers
// depend only on the tensors' names, dtypes and shapes), so that a save copies each tensor into
// place and allocates nothing. model(): every state_dict tensor (trained, frozen, running
// statistics, buffers); optimizer(): the rest of the persistent state.
class CheckpointImage {
 public:
  explicit CheckpointImage(const PlanInstance& inst);
  // Copies every tensor's current value into place (the caller guarantees nobody writes them).
  void stage();
  const std::vector<uint8_t>& model() const { return model_; }
  const std::vector<uint8_t>& optimizer() const { return optimizer_; }

 private:
  struct Place {
    const StoredTensor* tensor;
    uint8_t* at;
  };
  std::vector<uint8_t> model_, optimizer_;
  std::vector<Place> places_;
};

// Writes a staged image as DIR's checkpoint of `state`, then points `latest` at it. Returns the
// new checkpoint folder.
std::string save_checkpoint(const std::string& dir, const CheckpointImage& image, const CheckpointState& state);

struct LoadedCheckpoint {
  std::string folder;
  CheckpointState state;
  SafetensorsFile model;
  SafetensorsFile optimizer;
};

// The checkpoint `latest` names, verified (JSON fields, file sizes and CRCs, safetensors headers).
// Throws of::Error naming the file and field that is wrong.
LoadedCheckpoint load_latest_checkpoint(const std::string& dir);
// Whether DIR has a `latest` pointer at all.
bool has_checkpoint(const std::string& dir);
// The step folder `latest` names ("" without a pointer); throws of::Error if it names none.
std::string latest_name(const std::string& dir);
// DIR's "step-*" folder names, sorted.
std::vector<std::string> step_folders(const std::string& dir);

}  // namespace of::runtime::train
