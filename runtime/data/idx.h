// SPDX-License-Identifier: Apache-2.0
// MNIST-family IDX files (LeCun's format: big-endian header, u8 payload), plain or gzip-compressed:
// images 0x00000803 u8 [n,rows,cols] plus labels 0x00000801 u8 [n]. Untrusted input: every header
// is checked against the bytes present before anything is allocated for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/ignore_index.h"
#include "runtime/data/fwd.h"

namespace of::runtime::data {

// Opens DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] for split "train" or "test" (the
// uncompressed file wins when both exist). Features: f32 [rows,cols] in [0,1]; labels: i64 scalar.
// num_classes > 0 bounds the labels (a label >= num_classes, other than ignore_label, fails naming its index).
std::unique_ptr<Dataset> open_idx(const std::string& dir, const std::string& split, int64_t num_classes = 0,
                                  int64_t ignore_label = kDefaultIgnoreIndex);

// The same checks on in-memory (already decompressed) file images; the names only appear in
// errors. The dataset copies what it keeps.
struct IdxNames {
  std::string images;
  std::string labels;
};
std::unique_ptr<Dataset> parse_idx(const uint8_t* images, size_t images_size, const uint8_t* labels,
                                   size_t labels_size, const IdxNames& names, int64_t num_classes = 0,
                                   int64_t ignore_label = kDefaultIgnoreIndex);

// Reads one IDX file, inflating it when it is gzip-compressed (the stream must be complete, its CRC
// intact). Inflates at most what the header declares, so a header claiming terabytes allocates
// nothing; a file longer than its header declares fails here, naming both sizes.
std::vector<uint8_t> read_idx_file(const std::string& path);
// The same on a file image already in memory (gzip or not); `path` only names it in errors.
std::vector<uint8_t> decode_idx_file(std::vector<uint8_t> file, const std::string& path);

}  // namespace of::runtime::data
