// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/box_copy.h"
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

namespace {

// A box's name in a pieces file: the tensor and where the box begins in it.
std::string piece_name(const std::string& tensor, const std::vector<int64_t>& begin) {
  return fmt::format("{}@{}", tensor, fmt::join(begin, ","));
}

}  // namespace

CheckpointImage::CheckpointImage(const PlanInstance& inst, int32_t shard)
    : shard_(shard), shards_(std::max<int32_t>(1, int32_t(inst.snapshots().size()))), pieces_(size_t(shards_)) {
  const plan::Plan& p = inst.plan();
  const plan::Task* snap = inst.snapshots().empty() ? nullptr : inst.snapshots()[size_t(shard)];
  for (int kind = 0; kind < 2; ++kind) {
    const bool weights = kind == 0;
    SafetensorsWriter w;
    std::vector<const StoredTensor*> order;
    for (const StoredTensor& t : inst.stored()) {
      if (t.shard != shard || (weights ? !t.weight : (!t.persistent || t.weight))) continue;
      w.add(t.key, t.desc.dtype, t.desc.shape, nullptr);
      order.push_back(&t);
      keys_[kind].push_back(t.key);
      data_bytes_[kind] += t.bytes;
    }
    std::vector<uint64_t> offsets;
    files_[kind] = w.layout(&offsets);
    for (size_t i = 0; i < order.size(); ++i) {
      uint8_t* at = files_[kind].data() + offsets[i];
      wholes_.emplace_back(order[i], at);
      // Constants never change: gathered from every box. Persistent tensors: from the boxes
      // the snapshot task reads, which hold the version of the piece it acts on.
      if (!order[i]->persistent || !snap) constants_.push_back({order[i], at});
    }
  }
  if (!snap) return;
  auto where = [&](const std::string& key) -> uint8_t* {
    for (const auto& whole : wholes_)
      if (whole.first->key == key) return whole.second;
    return nullptr;
  };
  auto box = [&](const plan::TaskInput& in) {
    const plan::LogicalTensor& t = p.tensors[size_t(p.regsts[size_t(in.id)].blobs[size_t(in.blob)].tensor)];
    const bool boxed = !t.full_shape.empty();
    return std::make_tuple(&t, boxed ? t.shard_begin : std::vector<int64_t>(t.desc.shape.size(), 0), boxed ? t.full_shape : t.desc.shape);
  };
  // The boxes it hands to each other shard, laid out as that shard's pieces file.
  std::vector<SafetensorsWriter> out{size_t(shards_)};
  std::vector<std::vector<Place>> handed{size_t(shards_)};
  for (const plan::TaskInput& in : snap->inputs) {
    const auto [t, begin, whole] = box(in);
    const uint8_t* data = inst.blob_data(in.id, in.blob);
    OF_ASSERT(data, "snapshot task '" + snap->name + "' reads a register this process does not hold");
    const auto element = size_t(dtype_size(t->desc.dtype));
    const int32_t to = inst.shard_of(t->name);
    if (to == shard) {
      uint8_t* at = where(t->name);
      OF_ASSERT(at, "tensor '" + t->name + "' of shard " + std::to_string(shard) + " has no place in its file");
      places_.push_back(Place{data, t->desc.shape, begin, whole, element, at, inst.in_gpu_memory(in.id)});
    } else {
      OF_ASSERT(to >= 0 && to < shards_, "tensor '" + t->name + "' has no shard");
      out[size_t(to)].add(piece_name(t->name, begin), t->desc.dtype, t->desc.shape, nullptr);
      handed[size_t(to)].push_back(
          Place{data, t->desc.shape, std::vector<int64_t>(t->desc.shape.size(), 0), t->desc.shape, element, nullptr, inst.in_gpu_memory(in.id)});
    }
  }
  for (Place& place : places_)
    if (place.gpu) place.staged.resize(size_t(numel(place.shape)) * place.element);
  for (auto& to : handed)
    for (Place& place : to)
      if (place.gpu) place.staged.resize(size_t(numel(place.shape)) * place.element);
  for (int32_t j = 0; j < shards_; ++j) {
    if (handed[size_t(j)].empty()) continue;
    std::vector<uint64_t> offsets;
    pieces_[size_t(j)] = out[size_t(j)].layout(&offsets);
    for (size_t i = 0; i < handed[size_t(j)].size(); ++i) {
      handed[size_t(j)][i].at = pieces_[size_t(j)].data() + offsets[i];
      places_.push_back(handed[size_t(j)][i]);
    }
  }
  // The boxes other shards hand this one (the plan says which: their snapshot tasks' reads).
  for (int32_t j = 0; j < shards_; ++j) {
    if (j == shard) continue;
    for (const plan::TaskInput& in : inst.snapshots()[size_t(j)]->inputs) {
      const auto [t, begin, whole] = box(in);
      if (inst.shard_of(t->name) != shard) continue;
      const StoredTensor* into = nullptr;
      for (const auto& w : wholes_)
        if (w.first->key == t->name) into = w.first;
      OF_ASSERT(into, "tensor '" + t->name + "' of shard " + std::to_string(shard) + " is not stored here");
      expected_.push_back(Expected{j, piece_name(t->name, begin), into, begin, t->desc.shape});
      if (std::find(from_.begin(), from_.end(), j) == from_.end()) from_.push_back(j);
    }
  }
}

void CheckpointImage::stage() {
  for (const Whole& c : constants_) c.tensor->gather(c.at);
  // Boxes come in device order; replicas of a tensor are equal except a device's own state
  // (BatchNorm's running statistics under data parallelism): the first device's stays, as DDP
  // keeps rank 0's.
  for (auto b = places_.rbegin(); b != places_.rend(); ++b) {
    const uint8_t* from = b->from;
    if (b->gpu) {  // the version the snapshot task holds: its producer's stream has finished it
      gpu_copy(b->staged.data(), b->from, b->staged.size());
      from = b->staged.data();
    }
    copy_box_in(from, b->shape, b->begin, b->whole, b->element, b->at);
  }
}

void CheckpointImage::add_pieces(const SafetensorsFile& file, int32_t j, const std::string& path) {
  size_t wanted = 0;
  for (const Expected& e : expected_) {
    if (e.from != j) continue;
    ++wanted;
    auto it = file.entries.find(e.name);
    if (it == file.entries.end()) fail({.file = path, .field = "tensor '" + e.name + "'"}, "missing (shard {} hands it to shard {})", j + 1, shard_ + 1);
    if (it->second.dtype != e.tensor->desc.dtype || it->second.shape != e.shape)
      fail({.file = path, .field = "tensor '" + e.name + "'"}, "is {} {}, the plan says {} {}", dtype_name(it->second.dtype), shape_str(it->second.shape),
           dtype_name(e.tensor->desc.dtype), shape_str(e.shape));
    uint8_t* at = nullptr;
    for (const auto& w : wholes_)
      if (w.first == e.tensor) at = w.second;
    copy_box_in(file.ptr(it->second), e.shape, e.begin, e.tensor->desc.shape, size_t(dtype_size(e.tensor->desc.dtype)), at);
  }
  if (file.entries.size() != wanted) fail({.file = path}, "holds {} boxes, the plan hands shard {} {} from shard {}", file.entries.size(), shard_ + 1, wanted, j + 1);
}

std::string shard_file(const char* kind, int32_t k, int32_t n) {
  if (n == 1) return fmt::format("{}.safetensors", kind);
  return fmt::format("{}-{:05d}-of-{:05d}.safetensors", kind, k + 1, n);
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

namespace {

std::string step_name(const CheckpointState& state) { return fmt::format("step-{:08d}", state.step); }

// The folder every shard of one save writes into. The checkpoint folder's writer holds its lock
// and removes what killed runs left at start, so the name need not be unique to this run.
fs::path partial_folder(const std::string& dir, const CheckpointState& state) {
  const fs::path partial = fs::path(dir) / (".partial-" + step_name(state));
  std::error_code ec;
  fs::create_directories(partial, ec);
  if (ec) fail({.file = partial.string()}, "cannot create: {}", ec.message());
  return partial;
}

std::string marker_name(int32_t shard) { return fmt::format("shard-{:05d}.json", shard + 1); }

nlohmann::json file_entry(const std::vector<uint8_t>& bytes) {
  return {{"bytes", bytes.size()}, {"crc32", crc32_of(bytes.data(), bytes.size())}};
}

std::string pieces_name(int32_t from, int32_t to) { return fmt::format("pieces-{:05d}-to-{:05d}.safetensors", from + 1, to + 1); }

// Waits until `file` is in `partial` (each is written whole, then renamed into place).
fs::path wait_for(const fs::path& partial, const std::string& file, const std::string& what, const std::function<bool()>& abandoned,
                  double timeout_s) {
  const fs::path path = partial / file;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::error_code ec;
  while (!fs::exists(path, ec)) {
    if (abandoned && abandoned()) fail({.file = partial.string()}, "{} never came: the run stopped", what);
    if (std::chrono::steady_clock::now() > deadline) fail({.file = partial.string()}, "{} did not come within {} s", what, timeout_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return path;
}

// Hands the boxes of other shards' tensors to their writers, then takes the boxes other shards
// hand this one: the tensors this shard writes are whole after it.
void exchange_pieces(const fs::path& partial, CheckpointImage& image, const std::function<bool()>& abandoned, double timeout_s) {
  for (int32_t j = 0; j < image.shards(); ++j)
    if (!image.pieces(j).empty()) write_file_atomic((partial / pieces_name(image.shard(), j)).string(), image.pieces(j));
  for (int32_t j : image.from_shards()) {
    const fs::path path = wait_for(partial, pieces_name(j, image.shard()), fmt::format("the boxes shard {} hands shard {}", j + 1, image.shard() + 1),
                                   abandoned, timeout_s);
    image.add_pieces(read_safetensors(path.string()), j, path.string());
  }
}

// Writes the shard's two files into `partial`; returns what the marker and state.json record.
nlohmann::json write_shard_files(const fs::path& partial, const CheckpointImage& image) {
  const std::string model = shard_file("model", image.shard(), image.shards());
  const std::string optimizer = shard_file("optimizer", image.shard(), image.shards());
  write_file_atomic((partial / model).string(), image.model());
  write_file_atomic((partial / optimizer).string(), image.optimizer());
  return {{"files", {{model, file_entry(image.model())}, {optimizer, file_entry(image.optimizer())}}},
          {"model", image.model_keys()},
          {"optimizer", image.optimizer_keys()},
          {"model_bytes", image.model_data_bytes()},
          {"optimizer_bytes", image.optimizer_data_bytes()}};
}

// Shard k's marker, read back and checked: it comes from another process.
nlohmann::json read_marker(const fs::path& path, int32_t k, int32_t n) {
  std::vector<uint8_t> bytes = read_file(path.string());
  nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  auto bad = [&](const std::string& field, const std::string& why) { fail({.file = path.string(), .field = field}, "{}", why); };
  if (j.is_discarded() || !j.is_object()) bad("", "is not a JSON object");
  if (!j.contains("files") || !j["files"].is_object() || j["files"].size() != 2) bad("files", "must name the shard's two files");
  for (const char* kind : {"model", "optimizer"}) {
    const std::string file = shard_file(kind, k, n);
    if (!j["files"].contains(file) || !j["files"][file].is_object()) bad("files", "does not name " + file);
    const nlohmann::json& f = j["files"][file];
    if (!f.contains("bytes") || !f["bytes"].is_number_unsigned() || !f.contains("crc32") || !f["crc32"].is_number_unsigned())
      bad("files." + file, "needs bytes and crc32");
    if (!j.contains(kind) || !j[kind].is_array()) bad(kind, "must list the shard's tensors");
    for (const nlohmann::json& key : j[kind])
      if (!key.is_string()) bad(kind, "must list tensor names");
    const std::string size = std::string(kind) + "_bytes";
    if (!j.contains(size) || !j[size].is_number_unsigned()) bad(size, "must be a byte count");
  }
  return j;
}

}  // namespace

void write_checkpoint_shard(const std::string& dir, CheckpointImage& image, const CheckpointState& state,
                            const std::function<bool()>& abandoned, double timeout_s) {
  OF_ASSERT(image.shard() > 0, "the first shard is written by commit_checkpoint");
  const fs::path partial = partial_folder(dir, state);
  exchange_pieces(partial, image, abandoned, timeout_s);
  nlohmann::json marker = write_shard_files(partial, image);
  const std::string text = marker.dump() + "\n";
  write_file_atomic((partial / marker_name(image.shard())).string(), text.data(), text.size());  // last: the shard is whole
}

std::string commit_checkpoint(const std::string& dir, CheckpointImage& first, const CheckpointState& state,
                              const std::function<bool()>& abandoned, double timeout_s) {
  OF_ASSERT(first.shard() == 0, "only the first shard commits");
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) fail({.file = dir}, "cannot create the checkpoint folder: {}", ec.message());
  const std::string name = step_name(state);
  const fs::path partial = partial_folder(dir, state);
  const int32_t n = first.shards();
  try {
    nlohmann::json files = nlohmann::json::object();
    // tensor -> shard file, and the tensors' bytes, per kind (the Hugging Face index).
    nlohmann::json weight_map[2] = {nlohmann::json::object(), nlohmann::json::object()};
    uint64_t total[2] = {0, 0};
    auto add_shard = [&](const nlohmann::json& shard, int32_t k, const std::string& from) {
      for (const auto& f : shard["files"].items()) files[f.key()] = f.value();
      int kind_index = 0;
      for (const char* kind : {"model", "optimizer"}) {
        for (const nlohmann::json& key : shard[kind]) {
          const std::string tensor = key.get<std::string>();
          if (weight_map[kind_index].contains(tensor))
            fail({.file = from, .field = kind}, "tensor '{}' is also in {}", tensor, weight_map[kind_index][tensor].get<std::string>());
          weight_map[kind_index][tensor] = shard_file(kind, k, n);
        }
        total[kind_index] += shard[std::string(kind) + "_bytes"].get<uint64_t>();
        ++kind_index;
      }
    };
    exchange_pieces(partial, first, abandoned, timeout_s);
    add_shard(write_shard_files(partial, first), 0, (partial / shard_file("model", 0, n)).string());
    for (int32_t k = 1; k < n; ++k) {
      const fs::path marker = wait_for(partial, marker_name(k), fmt::format("checkpoint shard {} of {}", k + 1, n), abandoned, timeout_s);
      add_shard(read_marker(marker, k, n), k, marker.string());
    }
    if (n > 1) {
      int kind_index = 0;
      for (const char* kind : {"model", "optimizer"}) {
        const nlohmann::json index{{"metadata", {{"total_size", total[kind_index]}}}, {"weight_map", weight_map[kind_index]}};
        const std::string text = index.dump(2) + "\n";
        const std::string file = std::string(kind) + ".safetensors.index.json";
        write_file_atomic((partial / file).string(), text.data(), text.size());
        files[file] = {{"bytes", text.size()}, {"crc32", crc32_of(text.data(), text.size())}};
        ++kind_index;
      }
      // Every shard has taken its pieces before its marker: markers and pieces go.
      for (const auto& e : fs::directory_iterator(partial, ec)) {
        const std::string file = e.path().filename().string();
        if (file.rfind("shard-", 0) == 0 || file.rfind("pieces-", 0) == 0) fs::remove(e.path(), ec);
      }
    }
    nlohmann::json j{{"format", kFormat},
                     {"step", state.step},
                     {"pieces", state.pieces},
                     {"epoch", state.epoch},
                     {"seed", state.seed},
                     {"micro_batches", state.micro_batches},
                     {"batch", state.batch},
                     {"model", state.model},
                     {"data", state.data},
                     {"shards", n},
                     {"files", files}};
    const std::string json = j.dump(2) + "\n";
    write_file_atomic((partial / "state.json").string(), json.data(), json.size());
  } catch (...) {
    fs::remove_all(partial, ec);  // a save that failed (a full disk, a shard that never came) leaves nothing behind
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
  // The bytes of one file the state records, checked against its size and CRC.
  auto verified = [&](const std::string& file) {
    const std::string path = (root / name / file).string();
    if (!files.is_object() || !files.contains(file) || !files[file].is_object())
      fail({.file = state_path, .field = "files." + file}, "missing");
    const nlohmann::json& f = files[file];
    if (!f.contains("bytes") || !f["bytes"].is_number_unsigned() || !f.contains("crc32") || !f["crc32"].is_number_unsigned())
      fail({.file = state_path, .field = "files." + file}, "needs bytes and crc32");
    std::vector<uint8_t> bytes = read_file(path);
    if (bytes.size() != f["bytes"].get<uint64_t>())
      fail({.file = path}, "has {} bytes, state.json records {} (truncated or replaced?)", bytes.size(), f["bytes"].get<uint64_t>());
    if (crc32_of(bytes.data(), bytes.size()) != f["crc32"].get<uint64_t>()) fail({.file = path}, "checksum mismatch: the file is corrupt");
    return bytes;
  };
  auto load = [&](const std::string& kind, std::string& shown) {
    const std::string single = kind + ".safetensors", index_file = kind + ".safetensors.index.json";
    if (!files.is_object() || !files.contains(index_file)) {
      shown = (root / name / single).string();
      return parse_safetensors(verified(single), shown);
    }
    // A sharded checkpoint: every shard the index names, verified, their tensors in one.
    shown = (root / name / index_file).string();
    std::vector<uint8_t> raw = verified(index_file);
    nlohmann::json index = nlohmann::json::parse(raw.begin(), raw.end(), nullptr, false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail({.file = shown, .field = "weight_map"}, "missing");
    std::map<std::string, std::string> where;  // tensor -> shard file
    for (const auto& e : index["weight_map"].items()) {
      if (!e.value().is_string()) fail({.file = shown, .field = "weight_map." + e.key()}, "must name a shard file");
      const std::string file = e.value().get<std::string>();
      if (file.find('/') != std::string::npos || file.rfind(kind + "-", 0) != 0)
        fail({.file = shown, .field = "weight_map." + e.key()}, "names '{}', not a shard of this checkpoint", file.substr(0, 64));
      where[e.key()] = file;
    }
    std::set<std::string> shards;
    for (const auto& f : files.items())
      if (f.key().rfind(kind + "-", 0) == 0) shards.insert(f.key());
    SafetensorsFile all;
    for (const std::string& file : shards) {
      std::vector<uint8_t> bytes = verified(file);
      const std::string path = (root / name / file).string();
      SafetensorsFile part = parse_safetensors(std::move(bytes), path);
      const uint64_t base = all.bytes.size();
      for (auto& [key, entry] : part.entries) {
        auto at = where.find(key);
        if (at == where.end() || at->second != file)
          fail({.file = path, .field = "tensor '" + key + "'"}, "is not where {} puts it", shown);
        if (!all.entries.emplace(key, SafetensorsEntry{entry.dtype, entry.shape, entry.offset + base, entry.bytes}).second)
          fail({.file = path, .field = "tensor '" + key + "'"}, "is in two shards");
      }
      all.bytes.insert(all.bytes.end(), part.bytes.begin() + ptrdiff_t(part.data_start), part.bytes.end());
    }
    for (const auto& [key, file] : where)
      if (!all.entries.count(key)) fail({.file = shown, .field = "weight_map." + key}, "names {}, which does not hold it", file);
    return all;
  };
  out.model = load("model", out.model_path);
  out.optimizer = load("optimizer", out.optimizer_path);
  return out;
}

}  // namespace of::runtime::train
