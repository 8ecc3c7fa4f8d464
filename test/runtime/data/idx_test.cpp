// SPDX-License-Identifier: Apache-2.0
// IDX reader: plain and gzipped round trips, every corruption refused naming the file, headers
// that claim more than the file holds allocate nothing, and the real Fashion-MNIST when installed.
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "runtime/data/dataset.h"
#include "runtime/data/idx.h"

using namespace of;
using namespace of::runtime::data;

namespace {

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

std::vector<uint8_t> idx_images(uint32_t n, uint32_t rows, uint32_t cols) {
  std::vector<uint8_t> b;
  put_be32(b, 0x803);
  put_be32(b, n);
  put_be32(b, rows);
  put_be32(b, cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) b.push_back(uint8_t(i * 7 % 256));
  return b;
}

std::vector<uint8_t> idx_labels(uint32_t n) {
  std::vector<uint8_t> b;
  put_be32(b, 0x801);
  put_be32(b, n);
  for (uint32_t i = 0; i < n; ++i) b.push_back(uint8_t(i % 10));
  return b;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/of_idx_test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

std::unique_ptr<Dataset> parse(const std::vector<uint8_t>& images, const std::vector<uint8_t>& labels) {
  return parse_idx(images.data(), images.size(), labels.data(), labels.size(), {"img.idx", "lbl.idx"});
}

}  // namespace

TEST_CASE("idx: plain and gzipped files read back the same samples", "[runtime]") {
  TempDir dir;
  std::vector<uint8_t> images = idx_images(5, 3, 4), labels = idx_labels(5);
  write_file_atomic(dir / "train-images-idx3-ubyte", images);
  write_file_atomic(dir / "train-labels-idx1-ubyte", labels);
  write_gz(dir / "t10k-images-idx3-ubyte.gz", images);
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", labels);
  for (const char* split : {"train", "test"}) {
    std::unique_ptr<Dataset> d = open_idx(dir.path, split);
    REQUIRE(d->size() == 5);
    CHECK(d->features().shape == Shape{3, 4});
    CHECK(d->features().dtype == DType::f32);
    CHECK(d->labels().shape == Shape{});
    CHECK(d->labels().dtype == DType::i64);
    std::vector<float> x(12);
    int64_t y = -1;
    d->read(2, x.data(), &y);
    CHECK(y == 2);
    for (int k = 0; k < 12; ++k) CHECK(x[size_t(k)] == float((24 + k) * 7 % 256) / 255.0f);
    d->read(4, x.data(), &y);
    CHECK(y == 4);
  }
  // The uncompressed file wins when both exist; a missing split names the directory and file.
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(4));
  CHECK(open_idx(dir.path, "train")->size() == 5);
  std::remove((dir / "t10k-labels-idx1-ubyte.gz").c_str());
  CHECK_THROWS_WITH(open_idx(dir.path, "test"), Catch::Contains(dir.path) && Catch::Contains("no t10k-labels-idx1-ubyte or t10k-labels-idx1-ubyte.gz"));
  CHECK_THROWS_WITH(open_idx(dir.path, "valid"), Catch::Contains("split 'valid'"));
}

TEST_CASE("idx: pixels scale to 0..1 and labels widen to i64", "[runtime]") {
  std::vector<uint8_t> images = idx_images(1, 1, 3), labels = idx_labels(1);
  images[16] = 0;
  images[17] = 255;
  images[18] = 51;
  labels[8] = 200;
  std::unique_ptr<Dataset> d = parse(images, labels);
  float x[3];
  int64_t y;
  d->read(0, x, &y);
  CHECK(x[0] == 0.0f);
  CHECK(x[1] == 1.0f);
  CHECK(x[2] == 0.2f);
  CHECK(y == 200);
  CHECK_THROWS_WITH(parse_idx(images.data(), images.size(), labels.data(), labels.size(), {"i", "lbl.idx"}, 10),
                    Catch::Contains("lbl.idx") && Catch::Contains("label 200 at index 0 is out of range (num_classes 10)"));
}

TEST_CASE("idx: corrupt files are refused naming the file", "[runtime]") {
  std::vector<uint8_t> images = idx_images(4, 2, 2), labels = idx_labels(4);
  CHECK_NOTHROW(parse(images, labels));

  std::vector<uint8_t> bad = images;
  bad[3] = 0x01;
  CHECK_THROWS_WITH(parse(bad, labels), Catch::Contains("img.idx: bad magic 0x00000801, expected 0x00000803"));
  CHECK_THROWS_WITH(parse(images, images), Catch::Contains("lbl.idx: bad magic 0x00000803, expected 0x00000801"));
  CHECK_THROWS_WITH(parse({0, 0}, labels), Catch::Contains("img.idx: not an IDX file (2 bytes"));
  CHECK_THROWS_WITH(parse(std::vector<uint8_t>(images.begin(), images.begin() + 10), labels),
                    Catch::Contains("img.idx: truncated IDX header (10 bytes, needs 16)"));

  bad = images;
  bad.pop_back();
  CHECK_THROWS_WITH(parse(bad, labels), Catch::Contains("img.idx: truncated: header declares u8 [4,2,2] (16 bytes), file holds 15 data bytes"));
  bad = labels;
  bad.push_back(0);
  bad.push_back(0);
  CHECK_THROWS_WITH(parse(images, bad), Catch::Contains("lbl.idx: 2 extra bytes: header declares u8 [4] (4 bytes), file holds 6"));

  CHECK_THROWS_WITH(parse(images, idx_labels(3)), Catch::Contains("lbl.idx: holds 3 labels but img.idx holds 4 images"));

  bad = idx_images(4, 2, 2);
  bad[11] = 0;  // rows = 0
  CHECK_THROWS_WITH(parse(bad, labels), Catch::Contains("img.idx: IDX dimension 1 is 0"));
  bad = idx_labels(0);
  CHECK_THROWS_WITH(parse(idx_images(0, 2, 2), bad), Catch::Contains("img.idx: IDX dimension 0 is 0"));

  // 2^31 images of 2^32-1 x 2^32-1 pixels in a 20-byte file: refused before any allocation.
  bad = {0, 0, 8, 3, 0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
  CHECK_THROWS_WITH(parse(bad, labels), Catch::Contains("img.idx: truncated: header declares u8 [2147483648,4294967295,4294967295] (over 2^64 bytes), file holds 4 data bytes"));
}

TEST_CASE("idx: file headers claiming 2^31 images allocate nothing, gzipped or not", "[runtime]") {
  TempDir dir;
  std::vector<uint8_t> huge;
  put_be32(huge, 0x803);
  put_be32(huge, 0x80000000u);
  put_be32(huge, 28);
  put_be32(huge, 28);
  huge.resize(huge.size() + 100, 1);
  std::vector<uint8_t> labels;
  put_be32(labels, 0x801);
  put_be32(labels, 0x80000000u);
  labels.resize(labels.size() + 100, 1);
  write_file_atomic(dir / "train-images-idx3-ubyte", huge);
  write_file_atomic(dir / "train-labels-idx1-ubyte", idx_labels(3));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(3, 2, 2));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", labels);
  CHECK_THROWS_WITH(open_idx(dir.path, "train"), Catch::Contains(dir / "train-images-idx3-ubyte") && Catch::Contains("truncated: header declares u8 [2147483648,28,28] (1683627180032 bytes), file holds 100 data bytes"));
  CHECK_THROWS_WITH(open_idx(dir.path, "test"), Catch::Contains(dir / "t10k-labels-idx1-ubyte.gz") && Catch::Contains("truncated: header declares u8 [2147483648] (2147483648 bytes), file holds 100 data bytes"));
  CHECK(read_idx_file(dir / "t10k-labels-idx1-ubyte.gz").size() == 108);
}

TEST_CASE("idx: gzipped files that are too long, corrupt or missing fail by name", "[runtime]") {
  TempDir dir;
  std::vector<uint8_t> long_images = idx_images(3, 2, 2);
  long_images.resize(long_images.size() + 200000, 9);  // more than one read chunk after the data
  write_gz(dir / "a.gz", long_images);
  CHECK_THROWS_WITH(read_idx_file(dir / "a.gz"), Catch::Contains(dir / "a.gz") && Catch::Contains("200000 extra bytes: header declares u8 [3,2,2] (12 bytes), file holds 200012 data bytes"));

  std::vector<uint8_t> good = idx_images(50, 28, 28);
  write_gz(dir / "b.gz", good);
  std::vector<uint8_t> gz = read_file(dir / "b.gz");
  CHECK(read_idx_file(dir / "b.gz") == good);
  std::vector<uint8_t> labels = idx_labels(50);
  // Read then parse, as open_idx does: a damaged header may only show in the strict parse.
  auto open = [&](const std::string& path) {
    std::vector<uint8_t> images = read_idx_file(path);
    return parse_idx(images.data(), images.size(), labels.data(), labels.size(), {path, "lbl"});
  };
  for (size_t cut : {gz.size() / 2, gz.size() - 4, size_t(12)}) {  // mid-stream, in the CRC trailer, in the header
    write_file_atomic(dir / "c.gz", std::vector<uint8_t>(gz.begin(), gz.begin() + long(cut)));
    CHECK_THROWS_WITH(open(dir / "c.gz"), Catch::Contains(dir / "c.gz"));
  }
  for (size_t at : {size_t(12), size_t(20), gz.size() / 2, gz.size() - 6}) {  // damaged deflate data or CRC
    std::vector<uint8_t> bad = gz;
    for (size_t i = at; i < at + 4; ++i) bad[i] ^= 0x5a;
    write_file_atomic(dir / "d.gz", bad);
    CHECK_THROWS_WITH(open(dir / "d.gz"), Catch::Contains(dir / "d.gz"));
  }
  // Concatenated members (as `cat a.gz b.gz` makes) read as one stream; other trailing bytes fail.
  write_gz(dir / "e.gz", std::vector<uint8_t>(good.begin() + 1000, good.end()));
  write_gz(dir / "b.gz", std::vector<uint8_t>(good.begin(), good.begin() + 1000));
  std::vector<uint8_t> two = read_file(dir / "b.gz");
  std::vector<uint8_t> second = read_file(dir / "e.gz");
  two.insert(two.end(), second.begin(), second.end());
  write_file_atomic(dir / "two.gz", two);
  CHECK(read_idx_file(dir / "two.gz") == good);
  gz.insert(gz.end(), {0, 0, 0});
  write_file_atomic(dir / "trail.gz", gz);
  CHECK_THROWS_WITH(open(dir / "trail.gz"), Catch::Contains(dir / "trail.gz") && Catch::Contains("3 bytes of trailing data after the gzip stream"));
  CHECK_THROWS_WITH(read_idx_file(dir / "missing.gz"), Catch::Contains(dir / "missing.gz") && Catch::Contains("cannot open"));
}

TEST_CASE("idx: the installed Fashion-MNIST reads as 60000 + 10000 28x28 images", "[runtime]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  struct stat st;
  // setup installs Debian's dataset-fashion-mnist: without it this check has not run, so it fails.
  INFO("no " << dir << " (install Debian's dataset-fashion-mnist)");
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  std::unique_ptr<Dataset> train = open_idx(dir, "train", 10);
  CHECK(train->size() == 60000);
  CHECK(train->features().shape == Shape{28, 28});
  std::vector<float> x(784);
  int64_t y = -1;
  train->read(0, x.data(), &y);
  // From /usr/bin/python3 -c "import gzip; d = gzip.open('.../train-labels-idx1-ubyte.gz').read();
  // print(d[8], sum(gzip.open('.../train-images-idx3-ubyte.gz').read()[16:16+784]))": 9 76247.
  CHECK(y == 9);
  double sum = 0;
  for (float v : x) sum += double(v);
  CHECK(sum * 255 == Approx(76247).epsilon(1e-6));
  for (int64_t i = 0; i < train->size(); i += 997) {
    train->read(i, x.data(), &y);
    CHECK((y >= 0 && y < 10));
  }
  std::unique_ptr<Dataset> test = open_idx(dir, "test", 10);
  CHECK(test->size() == 10000);
  CHECK(test->features().shape == Shape{28, 28});
}
