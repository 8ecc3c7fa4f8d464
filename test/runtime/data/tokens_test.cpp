// SPDX-License-Identifier: Apache-2.0
// Token datasets: next-token shifting, uint16/uint32 little-endian decoding, the vocab bound
// checked at open, and sizes that are not whole tokens or samples.
#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/data/dataset.h"
#include "runtime/data/tokens.h"

using namespace of;
using namespace of::runtime::data;

namespace {

std::vector<uint8_t> le_tokens(const std::vector<uint32_t>& tokens, int width) {
  std::vector<uint8_t> b;
  for (uint32_t t : tokens)
    for (int k = 0; k < width; ++k) b.push_back(uint8_t(t >> (8 * k)));
  return b;
}

}  // namespace

TEST_CASE("tokens: sample i is tokens i*seq to i*seq+seq with labels shifted by one", "[runtime]") {
  // 11 tokens, seq 3: (11 - 1) / 3 = 3 samples; the last token (10) is never a feature.
  std::vector<uint32_t> t = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  std::vector<uint8_t> b = le_tokens(t, 2);
  std::unique_ptr<Dataset> d = parse_tokens(b.data(), b.size(), "t.bin", TokenWidth::u16, 3);
  REQUIRE(d->size() == 3);
  CHECK(d->features().shape == Shape{3});
  CHECK(d->features().dtype == DType::i64);
  CHECK(d->labels().shape == Shape{3});
  CHECK(d->labels().dtype == DType::i64);
  int64_t x[3], y[3];
  d->read(0, x, y);
  CHECK(std::vector<int64_t>(x, x + 3) == std::vector<int64_t>{10, 11, 12});
  CHECK(std::vector<int64_t>(y, y + 3) == std::vector<int64_t>{11, 12, 13});
  d->read(2, x, y);
  CHECK(std::vector<int64_t>(x, x + 3) == std::vector<int64_t>{16, 17, 18});
  CHECK(std::vector<int64_t>(y, y + 3) == std::vector<int64_t>{17, 18, 19});
  // Exactly seq + 1 tokens make one sample; 10 tokens with seq 3 make 3.
  CHECK(parse_tokens(b.data(), 8, "t.bin", TokenWidth::u16, 3)->size() == 1);
  CHECK(parse_tokens(b.data(), 20, "t.bin", TokenWidth::u16, 3)->size() == 3);
}

TEST_CASE("tokens: uint16 and uint32 are little-endian, open reads a file", "[runtime]") {
  std::vector<uint32_t> t = {65535, 1, 258, 70000, 4000000000u};
  std::vector<uint8_t> b16 = le_tokens({65535, 1, 258}, 2);
  int64_t x[2], y[2];
  parse_tokens(b16.data(), b16.size(), "t.bin", TokenWidth::u16, 2)->read(0, x, y);
  CHECK(x[0] == 65535);
  CHECK(x[1] == 1);
  CHECK(y[1] == 258);

  const std::string path = "/tmp/of_tokens_test.bin";
  write_file_atomic(path, le_tokens(t, 4));
  std::unique_ptr<Dataset> d = open_tokens(path, TokenWidth::u32, 2);
  REQUIRE(d->size() == 2);
  d->read(1, x, y);
  CHECK(x[0] == 258);
  CHECK(x[1] == 70000);
  CHECK(y[1] == 4000000000ll);
  // The same bytes as uint16 are 10 tokens.
  CHECK(open_tokens(path, TokenWidth::u16, 3)->size() == 3);
  std::remove(path.c_str());
  CHECK_THROWS_WITH(open_tokens(path, TokenWidth::u16, 3), Catch::Contains(path + ": cannot open"));
}

TEST_CASE("tokens: vocab bound, partial tokens and short files are refused by name", "[runtime]") {
  std::vector<uint8_t> b = le_tokens({1, 2, 3, 49999, 50257, 7}, 2);
  CHECK_NOTHROW(parse_tokens(b.data(), b.size(), "t.bin", TokenWidth::u16, 2));
  CHECK_NOTHROW(parse_tokens(b.data(), b.size(), "t.bin", TokenWidth::u16, 2, 50258));
  CHECK_THROWS_WITH(parse_tokens(b.data(), b.size(), "t.bin", TokenWidth::u16, 2, 50257),
                    Catch::Contains("t.bin: token 50257 at position 4 is >= vocab 50257"));
  CHECK_THROWS_WITH(parse_tokens(b.data(), 11, "t.bin", TokenWidth::u16, 2),
                    Catch::Contains("t.bin: 11 bytes is not a whole number of uint16 tokens"));
  CHECK_THROWS_WITH(parse_tokens(b.data(), 10, "t.bin", TokenWidth::u32, 2),
                    Catch::Contains("t.bin: 10 bytes is not a whole number of uint32 tokens"));
  CHECK_THROWS_WITH(parse_tokens(b.data(), 6, "t.bin", TokenWidth::u16, 3),
                    Catch::Contains("t.bin: 3 tokens are fewer than one sample needs (seq 3 + 1)"));
  CHECK_THROWS_WITH(parse_tokens(b.data(), 0, "t.bin", TokenWidth::u16, 1),
                    Catch::Contains("t.bin: 0 tokens are fewer"));
  CHECK_THROWS_WITH(parse_tokens(b.data(), b.size(), "t.bin", TokenWidth::u16, 0),
                    Catch::Contains("t.bin: token sequence length must be > 0, not 0"));
}
