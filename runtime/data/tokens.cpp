// SPDX-License-Identifier: Apache-2.0
#include "runtime/data/tokens.h"

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/data/dataset.h"

namespace of::runtime::data {
namespace {

// Little-endian regardless of the host, byte by byte.
uint32_t token_at(const uint8_t* p, size_t i, TokenWidth width) {
  if (width == TokenWidth::u16) return uint32_t(p[2 * i]) | (uint32_t(p[2 * i + 1]) << 8);
  const uint8_t* q = p + 4 * i;
  return uint32_t(q[0]) | (uint32_t(q[1]) << 8) | (uint32_t(q[2]) << 16) | (uint32_t(q[3]) << 24);
}

class TokenDataset final : public Dataset {
 public:
  TokenDataset(std::vector<uint8_t> bytes, TokenWidth width, int64_t seq, int64_t size)
      : bytes_(std::move(bytes)),
        width_(width),
        seq_(seq),
        size_(size),
        features_{{seq}, DType::i64},
        labels_{{seq}, DType::i64} {}

  int64_t size() const override { return size_; }
  const TensorDesc& features() const override { return features_; }
  const TensorDesc& labels() const override { return labels_; }

  void read(int64_t index, void* features, void* labels) const override {
    OF_ASSERT(index >= 0 && index < size_, "token sample index out of range");
    auto* x = static_cast<int64_t*>(features);
    auto* y = static_cast<int64_t*>(labels);
    size_t start = size_t(index) * size_t(seq_);
    for (int64_t k = 0; k < seq_; ++k) {
      x[k] = token_at(bytes_.data(), start + size_t(k), width_);
      y[k] = token_at(bytes_.data(), start + size_t(k) + 1, width_);
    }
  }

 private:
  std::vector<uint8_t> bytes_;
  TokenWidth width_;
  int64_t seq_;
  int64_t size_;
  TensorDesc features_;
  TensorDesc labels_;
};

// Checks the file image and returns the number of samples.
int64_t validate(const uint8_t* bytes, size_t size, const std::string& path, TokenWidth width, int64_t seq,
                 int64_t vocab) {
  size_t w = size_t(width);
  if (seq <= 0) fail({.file = path}, "token sequence length must be > 0, not {}", seq);
  if (size % w != 0)
    fail({.file = path}, "{} bytes is not a whole number of uint{} tokens", size, 8 * w);
  uint64_t tokens = size / w;
  if (tokens < uint64_t(seq) + 1)
    fail({.file = path}, "{} tokens are fewer than one sample needs (seq {} + 1)", tokens, seq);
  if (vocab > 0) {
    for (size_t i = 0; i < tokens; ++i) {
      uint32_t t = token_at(bytes, i, width);
      if (t >= uint64_t(vocab)) fail({.file = path}, "token {} at position {} is >= vocab {}", t, i, vocab);
    }
  }
  return int64_t((tokens - 1) / uint64_t(seq));
}

}  // namespace

std::unique_ptr<Dataset> parse_tokens(const uint8_t* bytes, size_t size, const std::string& path, TokenWidth width,
                                      int64_t seq, int64_t vocab) {
  int64_t n = validate(bytes, size, path, width, seq, vocab);
  return std::make_unique<TokenDataset>(std::vector<uint8_t>(bytes, bytes + size), width, seq, n);
}

std::unique_ptr<Dataset> open_tokens(const std::string& path, TokenWidth width, int64_t seq, int64_t vocab) {
  std::vector<uint8_t> bytes = read_file(path);
  int64_t n = validate(bytes.data(), bytes.size(), path, width, seq, vocab);
  return std::make_unique<TokenDataset>(std::move(bytes), width, seq, n);
}

}  // namespace of::runtime::data
