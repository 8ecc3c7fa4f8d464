// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_util.h"

namespace of::runtime::train {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFormat = "of-checkpoint-1";

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail({.file = dir.string()}, "cannot open the folder to sync it");
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

CheckpointImage::CheckpointImage(const PlanInstance& inst) {
  for (bool weights : {true, false}) {
    SafetensorsWriter w;
    std::vector<const StoredTensor*> order;
    for (const StoredTensor& t : inst.stored()) {
      if (weights ? !t.weight : (!t.persistent || t.weight)) continue;
      w.add(t.key, t.desc.dtype, t.desc.shape, nullptr);
      order.push_back(&t);
    }
    std::vector<uint64_t> offsets;
    std::vector<uint8_t>& file = weights ? model_ : optimizer_;
    file = w.layout(&offsets);
    for (size_t i = 0; i < order.size(); ++i) places_.push_back({order[i], file.data() + offsets[i]});
  }
}

void CheckpointImage::stage() {
  for (const Place& p : places_) p.tensor->gather(p.at);
}

std::vector<std::string> step_folders(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind("step-", 0) == 0) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool has_checkpoint(const std::string& dir) { return fs::exists(fs::path(dir) / "latest"); }

std::string latest_name(const std::string& dir) {
  const fs::path pointer = fs::path(dir) / "latest";
  if (!fs::exists(pointer)) return {};
  std::vector<uint8_t> raw = read_file(pointer.string());
  std::string name(raw.begin(), raw.end());
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  if (name.rfind("step-", 0) != 0 || name.find('/') != std::string::npos || name.size() > 64)
    fail({.file = pointer.string()}, "does not name a step folder (has '{}')", name.substr(0, 64));
  return name;
}

std::string save_checkpoint(const std::string& dir, const CheckpointImage& image, const CheckpointState& state) {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) fail({.file = dir}, "cannot create the checkpoint folder: {}", ec.message());
  const std::string name = fmt::format("step-{:08d}", state.step);
  const fs::path partial = root / fmt::format(".partial-{}-{}", name, ::getpid());
  fs::remove_all(partial, ec);
  fs::create_directory(partial, ec);
  if (ec) fail({.file = partial.string()}, "cannot create: {}", ec.message());

  const std::vector<uint8_t>& model = image.model();
  const std::vector<uint8_t>& optimizer = image.optimizer();
  nlohmann::json j{{"format", kFormat},
                   {"step", state.step},
                   {"pieces", state.pieces},
                   {"epoch", state.epoch},
                   {"seed", state.seed},
                   {"micro_batches", state.micro_batches},
                   {"batch", state.batch},
                   {"model", state.model},
                   {"data", state.data},
                   {"files",
                    {{"model.safetensors", {{"bytes", model.size()}, {"crc32", crc32_of(model.data(), model.size())}}},
                     {"optimizer.safetensors",
                      {{"bytes", optimizer.size()}, {"crc32", crc32_of(optimizer.data(), optimizer.size())}}}}}};
  const std::string json = j.dump(2) + "\n";
  try {
    write_file_atomic((partial / "model.safetensors").string(), model);
    write_file_atomic((partial / "optimizer.safetensors").string(), optimizer);
    write_file_atomic((partial / "state.json").string(), json.data(), json.size());
  } catch (...) {
    fs::remove_all(partial, ec);  // a save that failed (a full disk) leaves nothing behind
    throw;
  }

  const fs::path final_path = root / name;
  fs::remove_all(final_path, ec);  // the same step saved again (a rerun from an older checkpoint)
  fs::rename(partial, final_path, ec);
  if (ec) fail({.file = final_path.string()}, "cannot move the checkpoint into place: {}", ec.message());
  fsync_dir(root);
  const std::string pointer = name + "\n";
  write_file_atomic((root / "latest").string(), pointer.data(), pointer.size());
  return final_path.string();
}

LoadedCheckpoint load_latest_checkpoint(const std::string& dir) {
  const fs::path root(dir);
  if (!has_checkpoint(dir)) read_file((root / "latest").string());  // fails naming the file
  const std::string name = latest_name(dir);
  LoadedCheckpoint out;
  out.folder = (root / name).string();
  const std::string state_path = (root / name / "state.json").string();
  std::vector<uint8_t> state_bytes = read_file(state_path);
  nlohmann::json j = nlohmann::json::parse(state_bytes.begin(), state_bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail({.file = state_path}, "is not a JSON object");
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) fail({.file = state_path, .field = key}, "missing");
    return j[key];
  };
  auto integer = [&](const char* key, int64_t lo) {
    const nlohmann::json& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo) fail({.file = state_path, .field = key}, "must be an integer >= {}", lo);
    return v.get<int64_t>();
  };
  auto text = [&](const char* key) {
    const nlohmann::json& v = field(key);
    if (!v.is_string()) fail({.file = state_path, .field = key}, "must be a string");
    return v.get<std::string>();
  };
  if (text("format") != kFormat) fail({.file = state_path, .field = "format"}, "is '{}', expected '{}'", text("format"), kFormat);
  CheckpointState& s = out.state;
  s.step = integer("step", 0);
  s.pieces = integer("pieces", 0);
  s.epoch = integer("epoch", 0);
  const nlohmann::json& seed = field("seed");
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    fail({.file = state_path, .field = "seed"}, "must be a non-negative integer");
  s.seed = seed.get<uint64_t>();
  s.micro_batches = int32_t(std::min<int64_t>(integer("micro_batches", 1), std::numeric_limits<int32_t>::max()));
  s.batch = integer("batch", 1);
  s.model = text("model");
  s.data = text("data");
  if (s.pieces != s.step * s.micro_batches)
    fail({.file = state_path, .field = "pieces"}, "{} is not step {} x micro_batches {}", s.pieces, s.step, s.micro_batches);

  const nlohmann::json& files = field("files");
  auto load = [&](const char* file) {
    const std::string path = (root / name / file).string();
    if (!files.is_object() || !files.contains(file) || !files[file].is_object())
      fail({.file = state_path, .field = std::string("files.") + file}, "missing");
    const nlohmann::json& f = files[file];
    if (!f.contains("bytes") || !f["bytes"].is_number_unsigned() || !f.contains("crc32") || !f["crc32"].is_number_unsigned())
      fail({.file = state_path, .field = std::string("files.") + file}, "needs bytes and crc32");
    std::vector<uint8_t> bytes = read_file(path);
    if (bytes.size() != f["bytes"].get<uint64_t>())
      fail({.file = path}, "has {} bytes, state.json records {} (truncated or replaced?)", bytes.size(), f["bytes"].get<uint64_t>());
    if (crc32_of(bytes.data(), bytes.size()) != f["crc32"].get<uint64_t>()) fail({.file = path}, "checksum mismatch: the file is corrupt");
    return parse_safetensors(bytes.data(), bytes.size(), path);
  };
  out.model = load("model.safetensors");
  out.optimizer = load("optimizer.safetensors");
  return out;
}

}  // namespace of::runtime::train
