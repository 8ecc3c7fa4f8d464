// SPDX-License-Identifier: Apache-2.0
// Every read names its file: read_file refuses directories and devices (/dev/zero never ends)
// instead of running out of memory; .npy float64 is read as float32 only when asked.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "common/npy.h"

using namespace of;

namespace {

std::vector<uint8_t> npy_f64(const std::vector<double>& values) {
  const std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ",), }";
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size()), 0};
  b.insert(b.end(), header.begin(), header.end());
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  b.insert(b.end(), p, p + values.size() * 8);
  return b;
}

}  // namespace

TEST_CASE("read_file: directories and devices are refused by name", "[common]") {
  CHECK_THROWS_WITH(read_file("/dev/zero"), "/dev/zero: not a regular file");
  CHECK_THROWS_WITH(read_file("/tmp"), "/tmp: is a directory, not a file");
  CHECK_THROWS_WITH(read_file("/nonexistent/x"), "/nonexistent/x: cannot open: No such file or directory");
}

TEST_CASE("npy: float64 is read as float32 only when asked", "[common]") {
  const std::vector<uint8_t> b = npy_f64({0.5, -2.0, 1e-3});
  CHECK_THROWS_WITH(parse_npy(b.data(), b.size(), "x.npy"), Catch::Contains("x.npy: unsupported .npy dtype '<f8'"));
  NpyArray a = parse_npy(b.data(), b.size(), "x.npy", true);
  CHECK(a.from_f64);
  CHECK(a.dtype == DType::f32);
  CHECK(a.shape == Shape{3});
  std::vector<float> f(3);
  std::memcpy(f.data(), a.data.data(), 12);
  CHECK(f == std::vector<float>{0.5f, -2.0f, float(1e-3)});
}

TEST_CASE("npy: float64 values float32 cannot hold are refused by index", "[common]") {
  const std::vector<uint8_t> big = npy_f64({1.0, -1e40});
  CHECK_THROWS_WITH(parse_npy(big.data(), big.size(), "x.npy", true), "x.npy: float64 value -1e+40 at flat index 1 does not fit in float32");
  // NaN and infinity stay what they are (the model's consumers decide about them).
  const std::vector<uint8_t> odd = npy_f64({std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()});
  NpyArray a = parse_npy(odd.data(), odd.size(), "x.npy", true);
  std::vector<float> f(2);
  std::memcpy(f.data(), a.data.data(), 8);
  CHECK(std::isnan(f[0]));
  CHECK(std::isinf(f[1]));
  // The declared size counts 8 bytes per value.
  std::vector<uint8_t> short_file = npy_f64({1.0, 2.0});
  short_file.resize(short_file.size() - 4);
  CHECK_THROWS_WITH(parse_npy(short_file.data(), short_file.size(), "x.npy", true), "x.npy: npy shape [2] needs more bytes than the file holds (12)");
}

TEST_CASE("npy: read_npy converts and moves the file's bytes in place, to what parse_npy gives", "[common]") {
  const std::string path = "/tmp/of_readers_inplace.npy";
  std::vector<double> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(double(i)) * 1e3;
  const std::vector<uint8_t> f64 = npy_f64(values);
  write_file_atomic(path, f64);
  const NpyArray in_place = read_npy(path, true);
  const NpyArray copied = parse_npy(f64.data(), f64.size(), path, true);
  CHECK(in_place.from_f64);
  CHECK(in_place.shape == Shape{1000});
  CHECK(in_place.data.size() == 4000);
  CHECK(in_place.data == copied.data);
  // float32 files: the data moved down over the header.
  std::vector<float> floats(values.begin(), values.end());
  write_npy(path, DType::f32, {10, 100}, floats.data());
  const NpyArray f32 = read_npy(path);
  CHECK(f32.shape == Shape{10, 100});
  REQUIRE(f32.data.size() == 4000);
  CHECK(std::memcmp(f32.data.data(), floats.data(), 4000) == 0);
  CHECK_THROWS_WITH(read_npy(path + ".missing"), Catch::Contains(path + ".missing"));
  std::remove(path.c_str());
}
