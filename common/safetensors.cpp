// SPDX-License-Identifier: Apache-2.0
#include "common/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_util.h"

namespace of {
namespace {

struct DtypeName {
  const char* name;
  DType dtype;
};
constexpr DtypeName kNames[] = {{"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16},
                                {"I32", DType::i32}, {"I64", DType::i64}, {"U8", DType::u8},
                                {"I8", DType::i8},   {"BOOL", DType::bool_}};

const char* name_of(DType t) {
  for (const DtypeName& n : kNames)
    if (n.dtype == t) return n.name;
  return "?";
}

}  // namespace

namespace {

// The checked entries of the file image `bytes`, and where its data section starts.
SafetensorsFile parse_entries(const uint8_t* bytes, size_t size, const std::string& path) {
  if (size < 8) fail({.file = path}, "not a safetensors file (shorter than its 8-byte header length)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > size - 8) fail({.file = path}, "safetensors header length {} exceeds the file size {}", header_len, size);
  nlohmann::json header;
  // nlohmann keeps the last of two equal keys: duplicates are caught while parsing.
  std::set<std::string> keys;
  std::string duplicate;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && !keys.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len, on_event);
  } catch (const nlohmann::json::exception& e) {
    fail({.file = path}, "safetensors header is not valid JSON");
  }
  if (!duplicate.empty()) fail({.file = path, .field = "tensor '" + duplicate + "'"}, "appears twice in the header");
  if (!header.is_object()) fail({.file = path}, "safetensors header is not a JSON object");
  SafetensorsFile file;
  uint64_t data_size = size - 8 - header_len;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string field = "tensor '" + it.key() + "'";
    const nlohmann::json& v = it.value();
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
        !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      fail({.file = path, .field = field}, "needs dtype, shape and data_offsets");
    SafetensorsEntry e;
    bool known = false;
    for (const DtypeName& n : kNames)
      if (v["dtype"] == n.name) e.dtype = n.dtype, known = true;
    if (!known) fail({.file = path, .field = field}, "unsupported dtype {}", v["dtype"].dump());
    uint64_t count = 1;
    bool empty = false;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) fail({.file = path, .field = field}, "shape has a non-natural dimension");
      empty = empty || d.get<uint64_t>() == 0;
    }
    for (const auto& d : v["shape"]) {
      uint64_t dim = d.get<uint64_t>();
      if (!empty && count > data_size / dim) fail({.file = path, .field = field}, "shape is larger than the file");
      count = empty ? 0 : count * dim;
      e.shape.push_back(int64_t(dim));
    }
    const auto& off = v["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail({.file = path, .field = field}, "data_offsets are not natural numbers");
    uint64_t b = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (b > end || end > data_size)
      fail({.file = path, .field = field}, "data_offsets [{},{}] outside the data section ({} bytes)", b, end, data_size);
    e.offset = b;
    e.bytes = end - b;
    if (e.bytes != count * uint64_t(dtype_size(e.dtype)))
      fail({.file = path, .field = field}, "holds {} bytes but shape {} of {} needs {}", e.bytes,
           shape_str(e.shape), name_of(e.dtype), count * uint64_t(dtype_size(e.dtype)));
    file.entries.emplace(it.key(), std::move(e));
  }
  // The tensors tile the data section exactly, as the safetensors format requires: sorted by
  // offset, each begins where the one before ends, and the last ends where the file does.
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, e] : file.entries) order.emplace_back(&name, &e);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.second->offset, a.second->bytes) < std::make_pair(b.second->offset, b.second->bytes);
  });
  uint64_t end = 0;
  const std::string* previous = nullptr;
  for (const auto& [name, e] : order) {
    const Where where{.file = path, .field = "tensor '" + *name + "'"};
    if (e->offset < end)
      fail(where, "data_offsets [{},{}] overlap tensor '{}', which ends at {}", e->offset, e->offset + e->bytes, *previous, end);
    if (e->offset > end)
      fail(where, "data_offsets [{},{}] leave bytes [{},{}) of the data section unused{}", e->offset, e->offset + e->bytes, end,
           e->offset, previous ? fmt::format(" (after tensor '{}')", *previous) : "");
    end = e->offset + e->bytes;
    previous = name;
  }
  if (end != data_size)
    fail(previous ? Where{.file = path, .field = "tensor '" + *previous + "'"} : Where{.file = path},
         "the data section holds {} bytes, but the tensors end at {}", data_size, end);
  file.data_start = 8 + header_len;
  return file;
}

}  // namespace

SafetensorsFile parse_safetensors(const uint8_t* bytes, size_t size, const std::string& path) {
  SafetensorsFile file = parse_entries(bytes, size, path);
  file.bytes.assign(bytes + file.data_start, bytes + size);
  file.data_start = 0;
  return file;
}

SafetensorsFile parse_safetensors(std::vector<uint8_t>&& bytes, const std::string& path) {
  SafetensorsFile file = parse_entries(bytes.data(), bytes.size(), path);
  file.bytes = std::move(bytes);
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) { return parse_safetensors(read_file(path), path); }

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, const void* data) {
  items_.push_back(Item{name, dtype, shape, data});
}

std::vector<uint8_t> SafetensorsWriter::layout(std::vector<uint64_t>* offsets) const {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const Item& it : items_) {
    uint64_t bytes = uint64_t(numel(it.shape) * dtype_size(it.dtype));
    header[it.name] = {{"dtype", name_of(it.dtype)}, {"shape", it.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h;
  try {
    h = header.dump();
  } catch (const nlohmann::json::type_error&) {  // JSON keys must be UTF-8: name the one that is not
    for (const Item& it : items_) {
      try {
        (void)nlohmann::json(it.name).dump();
      } catch (const nlohmann::json::type_error&) {
        fail({.field = "tensor '" + nlohmann::json(it.name).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "'"},
             "a safetensors name must be UTF-8");
      }
    }
    throw;
  }
  h.append((8 - h.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  std::vector<uint8_t> out(8 + h.size() + offset);
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[i] = uint8_t(len >> (8 * i));
  std::memcpy(out.data() + 8, h.data(), h.size());
  offsets->clear();
  uint64_t at = 8 + h.size();
  for (const Item& it : items_) {
    offsets->push_back(at);
    at += uint64_t(numel(it.shape) * dtype_size(it.dtype));
  }
  return out;
}

std::vector<uint8_t> SafetensorsWriter::serialize() const {
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> out = layout(&offsets);
  for (size_t i = 0; i < items_.size(); ++i) {
    const size_t bytes = size_t(numel(items_[i].shape) * dtype_size(items_[i].dtype));
    if (bytes) std::memcpy(out.data() + offsets[i], items_[i].data, bytes);
  }
  return out;
}

void SafetensorsWriter::write(const std::string& path) const { write_file_atomic(path, serialize()); }

}  // namespace of
