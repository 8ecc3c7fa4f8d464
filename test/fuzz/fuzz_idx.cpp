// SPDX-License-Identifier: Apache-2.0
// Input bytes -> the IDX reader, gzip included. Layout: 2 bytes (little-endian) give the length of
// the images file, 1 flag byte (bit 0: num_classes 10), then the images file, then the labels file.
// Each file goes through decode_idx_file (inflated when gzip) and then parse_idx; every sample of
// a parsed dataset is read.
#include <algorithm>
#include <vector>

#include "common/error.h"
#include "runtime/data/dataset.h"
#include "runtime/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t* body = data + 3;
  size_t rest = size - 3;
  size_t split = std::min<size_t>(size_t(data[0]) | (size_t(data[1]) << 8), rest);
  try {
    using namespace of::runtime::data;
    std::vector<uint8_t> images = decode_idx_file({body, body + split}, "images.idx");
    std::vector<uint8_t> labels = decode_idx_file({body + split, body + rest}, "labels.idx");
    auto d = parse_idx(images.data(), images.size(), labels.data(), labels.size(), {"images.idx", "labels.idx"},
                       data[2] & 1 ? 10 : 0);
    std::vector<float> x(size_t(d->features().bytes() / 4));
    int64_t y = -1;
    for (int64_t i = 0; i < d->size(); ++i) {
      d->read(i, x.data(), &y);
      if (y < 0 || y > 255 || x[0] < 0.0f || x[0] > 1.0f) __builtin_trap();
    }
  } catch (const of::Error&) {
  }
  return 0;
}
