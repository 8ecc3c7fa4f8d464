// SPDX-License-Identifier: Apache-2.0
// .npy and safetensors readers: round trips, and refusals that allocate nothing a header claims.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "common/safetensors.h"

using namespace of;

TEST_CASE("npy: write then read gives the same array", "[common]") {
  std::string path = "/tmp/of_io_test.npy";
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  write_npy(path, DType::f32, {2, 3}, v.data());
  NpyArray a = read_npy(path);
  CHECK(a.dtype == DType::f32);
  CHECK(a.shape == Shape{2, 3});
  CHECK(std::memcmp(a.data.data(), v.data(), 24) == 0);
  write_npy(path, DType::i64, {3}, std::vector<int64_t>{7, 8, 9}.data());
  CHECK(read_npy(path).shape == Shape{3});
  std::remove(path.c_str());
}

TEST_CASE("npy: bad headers and sizes are refused by name", "[common]") {
  auto parse = [](const std::string& header, size_t data_bytes) {
    std::string file = std::string("\x93NUMPY\x01\x00", 8);
    file += char(header.size() & 0xff);
    file += char(header.size() >> 8);
    file += header + std::string(data_bytes, '\0');
    return parse_npy(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "x.npy");
  };
  CHECK_NOTHROW(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20), Catch::Contains("x.npy") && Catch::Contains("more bytes than the file holds (20)"));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28), Catch::Contains("needs 24 data bytes, file holds 28"));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000000000), }", 8), Catch::Contains("more bytes than the file holds"));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, ), }", 8), Catch::Contains("overflows"));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", 8), Catch::Contains("bad dimension"));
  CHECK_THROWS_WITH(parse("{'descr': '>f8', 'fortran_order': False, 'shape': (2, ), }", 16), Catch::Contains("unsupported .npy dtype"));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'fortran_order': True, 'shape': (2, ), }", 8), Catch::Contains("Fortran"));
  CHECK_THROWS_WITH(parse("{'descr': '<f4', 'shape': (2, ), }", 8), Catch::Contains("no 'fortran_order'"));
  std::string magic = "NOTNUMPY..";
  CHECK_THROWS_WITH(parse_npy(reinterpret_cast<const uint8_t*>(magic.data()), magic.size(), "x.npy"), Catch::Contains("bad magic"));
}

TEST_CASE("safetensors: write then read, corrupt headers are refused", "[common]") {
  std::vector<float> w = {1, 2, 3, 4};
  std::vector<int64_t> s = {5, 6};
  SafetensorsWriter writer;
  writer.add("w", DType::f32, {2, 2}, w.data());
  writer.add("s", DType::i64, {2}, s.data());
  std::vector<uint8_t> bytes = writer.serialize();
  SafetensorsFile f = parse_safetensors(bytes.data(), bytes.size(), "w.safetensors");
  REQUIRE(f.entries.size() == 2);
  CHECK(f.entries.at("w").shape == Shape{2, 2});
  CHECK(std::memcmp(f.ptr(f.entries.at("w")), w.data(), 16) == 0);
  CHECK(std::memcmp(f.ptr(f.entries.at("s")), s.data(), 16) == 0);

  auto with_header = [](const std::string& json, size_t data) {
    std::vector<uint8_t> b(8 + json.size() + data);
    uint64_t n = json.size();
    std::memcpy(b.data(), &n, 8);
    std::memcpy(b.data() + 8, json.data(), json.size());
    return b;
  };
  auto parse = [](const std::vector<uint8_t>& b) { return parse_safetensors(b.data(), b.size(), "w.safetensors"); };
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8)), Catch::Contains("outside the data section"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)), Catch::Contains("needs 12"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", 8)), Catch::Contains("non-natural"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8)), Catch::Contains("larger than the file"));
  CHECK_THROWS_WITH(parse(with_header(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8)), Catch::Contains("unsupported dtype"));
  CHECK_THROWS_WITH(parse(with_header("{not json", 0)), Catch::Contains("not valid JSON"));
  std::vector<uint8_t> huge(8, 0xff);
  CHECK_THROWS_WITH(parse(huge), Catch::Contains("exceeds the file size"));
}

TEST_CASE("write_file_atomic: the file appears whole, no temporary remains", "[common]") {
  std::string path = "/tmp/of_atomic_test.bin";
  std::vector<uint8_t> bytes(1000, 7);
  write_file_atomic(path, bytes);
  CHECK(read_file(path) == bytes);
  CHECK_THROWS_WITH(write_file_atomic("/nonexistent-dir/x.bin", bytes), Catch::Contains("/nonexistent-dir/x.bin"));
  std::remove(path.c_str());
}

TEST_CASE("npy: zero-size arrays read back", "[common]") {
  std::string path = "/tmp/of_io_zero.npy";
  write_npy(path, DType::f32, {4, 0}, nullptr);
  NpyArray a = read_npy(path);
  CHECK(a.shape == Shape{4, 0});
  CHECK(a.data.empty());
  std::remove(path.c_str());
}
