// SPDX-License-Identifier: Apache-2.0
#include "runtime/data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/data/dataset.h"

namespace of::runtime::data {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // u8, 3 dims
constexpr uint32_t kLabelsMagic = 0x00000801;  // u8, 1 dim
constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// Product of the dims, saturating at 2^64-1 (no file holds that many bytes, so it still compares
// as "more than the file holds").
uint64_t product(const Shape& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > kSaturated / uint64_t(d)) return kSaturated;
    n *= uint64_t(d);
  }
  return n;
}

void check_data_size(const std::string& path, const Shape& dims, uint64_t want, uint64_t have) {
  if (want == have) return;
  std::string declared = want == kSaturated ? "over 2^64" : std::to_string(want);
  if (have < want)
    fail({.file = path}, "truncated: header declares u8 {} ({} bytes), file holds {} data bytes", shape_str(dims),
         declared, have);
  fail({.file = path}, "{} extra bytes: header declares u8 {} ({} bytes), file holds {} data bytes", have - want,
       shape_str(dims), declared, have);
}

// Strict parse of one IDX file image: magic, header, non-zero dims, exact data size. Returns the
// dims; the data starts at 4 + 4 * dims.size().
Shape parse_idx_file(const uint8_t* p, size_t size, const std::string& path, uint32_t want_magic) {
  const char* what = want_magic == kImagesMagic ? "IDX u8 images [n,rows,cols]" : "IDX u8 labels [n]";
  if (size < 4) fail({.file = path}, "not an IDX file ({} bytes, shorter than its magic)", size);
  uint32_t magic = be32(p);
  if (magic != want_magic) fail({.file = path}, "bad magic 0x{:08x}, expected 0x{:08x} ({})", magic, want_magic, what);
  size_t ndims = want_magic & 0xff;
  size_t header = 4 + 4 * ndims;
  if (size < header) fail({.file = path}, "truncated IDX header ({} bytes, needs {})", size, header);
  Shape dims;
  for (size_t i = 0; i < ndims; ++i) {
    uint32_t d = be32(p + 4 + 4 * i);
    if (d == 0) fail({.file = path}, "IDX dimension {} is 0", i);
    dims.push_back(d);
  }
  check_data_size(path, dims, product(dims), size - header);
  return dims;
}

// Total bytes (header + data) a well-formed u8 IDX header prefix declares; nullopt when the
// prefix is malformed or overflows (the strict parse then reports why).
std::optional<uint64_t> declared_total(const std::vector<uint8_t>& b) {
  if (b.size() < 4 || b[0] != 0 || b[1] != 0 || b[2] != 0x08 || b[3] == 0) return std::nullopt;
  size_t header = 4 + 4 * size_t(b[3]);
  if (b.size() < header) return std::nullopt;
  Shape dims;
  for (size_t i = 4; i < header; i += 4) dims.push_back(be32(b.data() + i));
  uint64_t data = product(dims);
  if (data == 0 || data > kSaturated - header) return std::nullopt;
  return header + data;
}

// Inflates a gzip file image (one or more members, as gzip writes them) with zlib's inflate rather
// than gzread: gzread reports a stream cut off before its CRC trailer as a plain end of data, so a
// truncated or unverified file would pass.
class GzipStream {
 public:
  GzipStream(const std::vector<uint8_t>& file, const std::string& path) : file_(file), path_(path) {
    if (::inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail({.file = path_}, "cannot decompress: out of memory");
  }
  ~GzipStream() { ::inflateEnd(&z_); }
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  // Up to n bytes into dst; fewer only at the end of the data. Fails on corrupt or cut-off streams.
  size_t read(uint8_t* dst, size_t n) {
    size_t got = 0;
    while (got < n && !ended_) {
      if (z_.avail_in == 0) {
        if (fed_ == file_.size()) fail({.file = path_}, "gzip stream is truncated (ends before its trailer)");
        z_.next_in = const_cast<Bytef*>(file_.data() + fed_);  // zlib does not write through next_in
        z_.avail_in = uInt(std::min<size_t>(file_.size() - fed_, 1u << 30));
        fed_ += z_.avail_in;
      }
      z_.next_out = dst + got;
      z_.avail_out = uInt(std::min<size_t>(n - got, 1u << 30));
      uInt before = z_.avail_out;
      int ret = ::inflate(&z_, Z_NO_FLUSH);
      got += before - z_.avail_out;
      if (ret == Z_STREAM_END) {
        end_member();
      } else if (ret != Z_OK && !(ret == Z_BUF_ERROR && z_.avail_in == 0)) {
        fail({.file = path_}, "cannot decompress: {}", z_.msg ? z_.msg : zError(ret));
      }
    }
    return got;
  }

 private:
  // After one member's trailer: another member may follow; anything else is refused.
  void end_member() {
    size_t left = z_.avail_in + (file_.size() - fed_);
    if (left == 0) {
      ended_ = true;
      return;
    }
    const uint8_t* next = file_.data() + (fed_ - z_.avail_in);
    if (left < 2 || next[0] != 0x1f || next[1] != 0x8b)
      fail({.file = path_}, "{} bytes of trailing data after the gzip stream", left);
    ::inflateReset(&z_);
  }

  const std::vector<uint8_t>& file_;
  const std::string& path_;
  z_stream z_{};
  size_t fed_ = 0;  // bytes of file_ handed to zlib so far
  bool ended_ = false;
};

class IdxDataset final : public Dataset {
 public:
  IdxDataset(std::vector<uint8_t> images, std::vector<uint8_t> labels, const Shape& image_dims)
      : images_(std::move(images)),
        labels_(std::move(labels)),
        size_(image_dims[0]),
        features_{{image_dims[1], image_dims[2]}, DType::f32},
        label_desc_{{}, DType::i64} {}

  int64_t size() const override { return size_; }
  const TensorDesc& features() const override { return features_; }
  const TensorDesc& labels() const override { return label_desc_; }

  // Pixels become f32 in [0,1] by /255, as torchvision's ToTensor does; no mean/std normalization.
  void read(int64_t index, void* features, void* labels) const override {
    OF_ASSERT(index >= 0 && index < size_, "idx sample index out of range");
    int64_t pixels = features_.shape[0] * features_.shape[1];
    const uint8_t* src = images_.data() + 16 + index * pixels;
    auto* dst = static_cast<float*>(features);
    for (int64_t k = 0; k < pixels; ++k) dst[k] = float(src[k]) / 255.0f;
    *static_cast<int64_t*>(labels) = labels_[8 + size_t(index)];
  }

 private:
  std::vector<uint8_t> images_;  // whole files, headers included
  std::vector<uint8_t> labels_;
  int64_t size_;
  TensorDesc features_;
  TensorDesc label_desc_;
};

// Validates both file images (and their agreement) and returns the image dims.
Shape validate(const uint8_t* images, size_t images_size, const uint8_t* labels, size_t labels_size,
               const IdxNames& names, int64_t num_classes, int64_t ignore_label) {
  Shape image_dims = parse_idx_file(images, images_size, names.images, kImagesMagic);
  Shape label_dims = parse_idx_file(labels, labels_size, names.labels, kLabelsMagic);
  if (image_dims[0] != label_dims[0])
    fail({.file = names.labels}, "holds {} labels but {} holds {} images", label_dims[0], names.images, image_dims[0]);
  if (num_classes > 0) {
    for (int64_t i = 0; i < label_dims[0]; ++i) {
      if (labels[8 + i] >= num_classes && labels[8 + i] != ignore_label)
        fail({.file = names.labels}, "label {} at index {} is out of range (num_classes {})", int(labels[8 + i]), i,
             num_classes);
    }
  }
  return image_dims;
}

std::string find_file(const std::string& dir, const std::string& name, const std::string& split) {
  std::string base = dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
  struct stat st;
  if (::stat(base.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return base;
  if (::stat((base + ".gz").c_str(), &st) == 0 && S_ISREG(st.st_mode)) return base + ".gz";
  fail({.file = dir}, "no {} or {}.gz (IDX split '{}')", name, name, split);
}

}  // namespace

std::vector<uint8_t> read_idx_file(const std::string& path) { return decode_idx_file(read_file(path), path); }

std::vector<uint8_t> decode_idx_file(std::vector<uint8_t> file, const std::string& path) {
  if (file.size() < 2 || file[0] != 0x1f || file[1] != 0x8b) return file;  // not gzip: parsed as it is
  GzipStream gz(file, path);
  // Grows `out` towards `target` bytes in chunks, so memory follows the bytes actually present.
  std::vector<uint8_t> out;
  auto fill = [&](uint64_t target) {
    while (out.size() < target) {
      size_t chunk = size_t(std::min<uint64_t>(target - out.size(), 1 << 20));
      size_t at = out.size();
      out.resize(at + chunk);
      size_t got = gz.read(out.data() + at, chunk);
      out.resize(at + got);
      if (got < chunk) return;
    }
  };
  fill(4);
  if (out.size() == 4 && out[0] == 0 && out[1] == 0 && out[2] == 0x08) fill(4 + 4 * uint64_t(out[3]));
  std::optional<uint64_t> total = declared_total(out);
  if (!total) return out;  // malformed or short header: the strict parse says why
  fill(*total);
  if (out.size() < *total) return out;  // the strict parse reports the truncation
  // Count (without keeping) whatever follows the declared data; this also reaches the stream's
  // end, where its CRC is checked.
  uint64_t extra = 0;
  uint8_t scratch[1 << 16];
  for (size_t got; (got = gz.read(scratch, sizeof scratch)) > 0;) extra += got;
  if (extra > 0) {
    size_t header = 4 + 4 * size_t(out[3]);
    Shape dims;
    for (size_t i = 4; i < header; i += 4) dims.push_back(be32(out.data() + i));
    check_data_size(path, dims, *total - header, *total - header + extra);
  }
  return out;
}

std::unique_ptr<Dataset> parse_idx(const uint8_t* images, size_t images_size, const uint8_t* labels,
                                   size_t labels_size, const IdxNames& names, int64_t num_classes, int64_t ignore_label) {
  Shape dims = validate(images, images_size, labels, labels_size, names, num_classes, ignore_label);
  return std::make_unique<IdxDataset>(std::vector<uint8_t>(images, images + images_size),
                                      std::vector<uint8_t>(labels, labels + labels_size), dims);
}

std::unique_ptr<Dataset> open_idx(const std::string& dir, const std::string& split, int64_t num_classes, int64_t ignore_label) {
  if (split != "train" && split != "test") fail({}, "IDX split '{}' is not 'train' or 'test'", split);
  std::string prefix = split == "train" ? "train" : "t10k";
  IdxNames names{find_file(dir, prefix + "-images-idx3-ubyte", split),
                 find_file(dir, prefix + "-labels-idx1-ubyte", split)};
  std::vector<uint8_t> images = read_idx_file(names.images);
  std::vector<uint8_t> labels = read_idx_file(names.labels);
  Shape dims = validate(images.data(), images.size(), labels.data(), labels.size(), names, num_classes, ignore_label);
  return std::make_unique<IdxDataset>(std::move(images), std::move(labels), dims);
}

}  // namespace of::runtime::data
