// SPDX-License-Identifier: Apache-2.0
// ofc's --devices and --device-memory values: what is accepted, and one line for what is not.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

TEST_CASE("parse_devices: N:cpu and RxD:cpu", "[compiler]") {
  CHECK(parse_devices("1:cpu").ranks == 1);
  CHECK(parse_devices("8:cpu").devices == 8);
  const DeviceSpec two_by_four = parse_devices("2x4:cpu");
  CHECK(two_by_four.ranks == 2);
  CHECK(two_by_four.devices == 8);
  for (const char* bad : {"", "4", "4:gpu", "0:cpu", "x4:cpu", "2x:cpu", "2x0:cpu", "-1:cpu", "2x2x2:cpu", "99999:cpu", "1x99999:cpu"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_devices(bad), of::Error);
  }
  CHECK(parse_devices("128x8:cpu").devices == 1024);
  CHECK(parse_devices("1024x1:cpu").ranks == 1024);
  CHECK_THROWS_WITH(parse_devices("2048x1:cpu"), Catch::Contains("at most 1024 devices"));
  CHECK_THROWS_WITH(parse_devices("128:cpu"), Catch::Contains("at most 64 devices per rank"));
  CHECK_THROWS_WITH(parse_devices("2x128:cpu"), Catch::Contains("at most 64 devices per rank"));
}

TEST_CASE("parse_devices: N:cuda and RxD:cuda are GPUs", "[compiler]") {
  CHECK(parse_devices("8:cpu").kind == 0);
  const DeviceSpec gpus = parse_devices("128x8:cuda");
  CHECK(gpus.kind == 1);
  CHECK(gpus.ranks == 128);
  CHECK(gpus.devices == 1024);
  CHECK(parse_devices("1:cuda").kind == 1);
  for (const char* bad : {"4:CUDA", "4:cuda:0", "4:gpu", "0:cuda"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_devices(bad), of::Error);
  }
}

TEST_CASE("parse_bytes: sizes with units", "[compiler]") {
  CHECK(parse_bytes("512MiB", "--device-memory") == 512ull << 20);
  CHECK(parse_bytes("16GB", "--device-memory") == 16000000000ull);
  CHECK(parse_bytes("1000", "--device-memory") == 1000);
  CHECK_THROWS_WITH(parse_bytes("12 parsecs", "--device-memory"), Catch::Contains("--device-memory"));
  CHECK_THROWS_AS(parse_bytes("0", "--device-memory"), of::Error);
}
