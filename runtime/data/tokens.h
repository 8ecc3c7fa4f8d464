// SPDX-License-Identifier: Apache-2.0
// A flat file of little-endian token ids (uint16 or uint32, as nanoGPT/llm.c write them) cut into
// next-token-prediction samples of `seq` tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/data/fwd.h"

namespace of::runtime::data {

enum class TokenWidth { u16 = 2, u32 = 4 };

// Sample i covers tokens [i*seq, i*seq + seq + 1): features are the first seq (i64 [seq]) and labels
// the last seq (i64 [seq], shifted by one). Samples do not overlap except for that one token, so
// size() = (num_tokens - 1) / seq and a tail shorter than a sample is never read.
// vocab > 0: every token in the file must be < vocab (checked once here, so read() cannot fail).
std::unique_ptr<Dataset> open_tokens(const std::string& path, TokenWidth width, int64_t seq, int64_t vocab = 0);

// The same on an in-memory file image; `path` only names it in errors.
std::unique_ptr<Dataset> parse_tokens(const uint8_t* bytes, size_t size, const std::string& path, TokenWidth width,
                                      int64_t seq, int64_t vocab = 0);

}  // namespace of::runtime::data
