// SPDX-License-Identifier: Apache-2.0
// safetensors' header is held to the format: every key once, tensors that tile the data section
// exactly (no overlap, no gap, nothing after the last); each refusal names the file and tensor.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/safetensors.h"

using namespace of;

namespace {

std::vector<uint8_t> with_header(const std::string& json, size_t data) {
  std::vector<uint8_t> b(8 + json.size() + data);
  uint64_t n = json.size();
  std::memcpy(b.data(), &n, 8);
  std::memcpy(b.data() + 8, json.data(), json.size());
  return b;
}

SafetensorsFile parse(const std::string& json, size_t data) {
  std::vector<uint8_t> b = with_header(json, data);
  return parse_safetensors(b.data(), b.size(), "w.safetensors");
}

std::string f32(const std::string& name, int n, int begin) {
  return "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(n) + "],\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(begin + 4 * n) + "]}";
}

}  // namespace

TEST_CASE("safetensors: a key given twice is refused by name", "[common]") {
  CHECK_THROWS_WITH(parse("{" + f32("w", 2, 0) + "," + f32("w", 2, 8) + "}", 16),
                    "w.safetensors: tensor 'w': appears twice in the header");
  // A nested key of the same name (inside __metadata__) is not a duplicate tensor.
  CHECK(parse("{\"__metadata__\":{\"w\":\"x\"}," + f32("w", 2, 0) + "}", 8).entries.size() == 1);
}

TEST_CASE("safetensors: overlapping offsets are refused", "[common]") {
  CHECK_THROWS_WITH(parse("{" + f32("a", 3, 0) + "," + f32("b", 2, 8) + "}", 16),
                    "w.safetensors: tensor 'b': data_offsets [8,16] overlap tensor 'a', which ends at 12");
  CHECK_THROWS_WITH(parse("{" + f32("a", 2, 0) + "," + f32("b", 2, 0) + "}", 8),
                    "w.safetensors: tensor 'b': data_offsets [0,8] overlap tensor 'a', which ends at 8");
}

TEST_CASE("safetensors: offsets must tile the data section exactly", "[common]") {
  CHECK_THROWS_WITH(parse("{" + f32("a", 1, 0) + "," + f32("b", 1, 8) + "}", 12),
                    "w.safetensors: tensor 'b': data_offsets [8,12] leave bytes [4,8) of the data section unused (after tensor 'a')");
  CHECK_THROWS_WITH(parse("{" + f32("a", 1, 4) + "}", 8),
                    "w.safetensors: tensor 'a': data_offsets [4,8] leave bytes [0,4) of the data section unused");
  CHECK_THROWS_WITH(parse("{" + f32("a", 1, 0) + "}", 12),
                    "w.safetensors: tensor 'a': the data section holds 12 bytes, but the tensors end at 4");
  // Key order is not offset order (JSON objects are unordered): only the offsets must tile.
  SafetensorsFile f = parse("{" + f32("a", 1, 8) + "," + f32("b", 2, 0) + "," + f32("c", 0, 12) + "}", 12);
  CHECK(f.entries.size() == 3);
  CHECK(f.entries.at("a").offset == 8);
}

TEST_CASE("safetensors: the writer refuses a tensor name that is not UTF-8 with of::Error", "[common]") {
  const float x = 1.0f;
  SafetensorsWriter w;
  w.add("fc.weight", DType::f32, {1}, &x);
  w.add(std::string("z\xd5", 2), DType::f32, {1}, &x);  // a lone lead byte
  try {
    (void)w.serialize();
    FAIL("serialize accepted a name that is not UTF-8");
  } catch (const of::Error& e) {
    CHECK(std::string(e.what()) == "tensor '\"z\\ufffd\"': a safetensors name must be UTF-8");
  }
}

TEST_CASE("safetensors: a file handed over keeps its bytes and reads the same tensors as a copy", "[common]") {
  std::vector<uint8_t> b = with_header("{" + f32("a", 2, 0) + "," + f32("b", 3, 8) + "}", 20);
  for (size_t i = b.size() - 20; i < b.size(); ++i) b[i] = uint8_t(i);
  const SafetensorsFile copied = parse_safetensors(b.data(), b.size(), "w.safetensors");
  std::vector<uint8_t> handed = b;
  const uint8_t* whole = handed.data();
  const SafetensorsFile kept = parse_safetensors(std::move(handed), "w.safetensors");
  CHECK(kept.bytes.data() == whole);  // not copied
  CHECK(kept.data_start == b.size() - 20);
  CHECK(copied.data_start == 0);
  CHECK(copied.bytes.size() == 20);
  for (const char* name : {"a", "b"}) {
    const SafetensorsEntry& e = kept.entries.at(name);
    CHECK(std::memcmp(kept.ptr(e), copied.ptr(copied.entries.at(name)), e.bytes) == 0);
  }
  CHECK(std::memcmp(kept.ptr(kept.entries.at("b")), b.data() + (b.size() - 12), 12) == 0);
  // Refusals name the file as before.
  std::vector<uint8_t> bad = with_header("{" + f32("a", 2, 0) + "}", 12);
  CHECK_THROWS_WITH(parse_safetensors(std::move(bad), "w.safetensors"), Catch::Contains("w.safetensors"));
}
