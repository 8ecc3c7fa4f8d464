// SPDX-License-Identifier: Apache-2.0
// make_dataset: the --data spec grammar and its errors.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "common/npy.h"
#include "runtime/data/dataset.h"

using namespace of;
using namespace of::runtime::data;

TEST_CASE("make_dataset: each kind opens from its spec", "[runtime]") {
  char tmpl[] = "/tmp/of_make_dataset.XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  // IDX: 2 images of 1x2, written uncompressed.
  write_file_atomic(dir + "/t10k-images-idx3-ubyte", std::vector<uint8_t>{0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 3, 4});
  write_file_atomic(dir + "/t10k-labels-idx1-ubyte", std::vector<uint8_t>{0, 0, 8, 1, 0, 0, 0, 2, 5, 6});
  std::unique_ptr<Dataset> d = make_dataset("idx:" + dir + ",split=test", {});
  CHECK(d->size() == 2);
  CHECK(d->features().shape == Shape{1, 2});
  CHECK_THROWS_WITH(make_dataset("idx:" + dir, {}), Catch::Contains("no train-images-idx3-ubyte"));
  CHECK_THROWS_WITH(make_dataset("idx:" + dir + ",split=test", {.num_classes = 6}), Catch::Contains("label 6 at index 1"));

  write_npy(dir + "/x.npy", DType::f32, {2, 3}, std::vector<float>(6, 1.0f).data());
  write_npy(dir + "/y.npy", DType::i64, {2}, std::vector<int64_t>{0, 1}.data());
  d = make_dataset("npy:" + dir + "/x.npy," + dir + "/y.npy", {});
  CHECK(d->features().shape == Shape{3});

  write_file_atomic(dir + "/tok.bin", std::vector<uint8_t>(4 * 9, 0));
  d = make_dataset("tokens:" + dir + "/tok.bin", {.seq = 4});
  CHECK(d->size() == 4);  // 18 uint16 tokens: (18 - 1) / 4
  d = make_dataset("tokens:" + dir + "/tok.bin,dtype=uint32", {.seq = 4});
  CHECK(d->size() == 2);  // 9 uint32 tokens
  CHECK(d->labels().shape == Shape{4});
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("make_dataset: malformed specs quote the spec and say what is expected", "[runtime]") {
  auto err = [](const std::string& spec, const DataOptions& o = {}) {
    try {
      make_dataset(spec, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err("foo:bar") == "--data 'foo:bar': unknown kind 'foo' (idx, npy, tokens)");
  CHECK(err("/data/mnist") == "--data '/data/mnist': expected KIND:ARGS (idx:DIR[,split=train|test], npy:FEATURES.npy,LABELS.npy, tokens:FILE[,dtype=uint16|uint32])");
  CHECK(err("idx:") == "--data 'idx:': empty argument");
  CHECK(err("idx:/d,split=valid") == "--data 'idx:/d,split=valid': split 'valid' is not 'train' or 'test'");
  CHECK(err("idx:/d,shuffle=1") == "--data 'idx:/d,shuffle=1': unknown option 'shuffle'");
  CHECK(err("idx:/d,/e") == "--data 'idx:/d,/e': idx takes one directory, got 2 arguments");
  CHECK(err("npy:x.npy") == "--data 'npy:x.npy': npy takes FEATURES.npy,LABELS.npy, got 1 arguments");
  CHECK(err("npy:x.npy,,y.npy") == "--data 'npy:x.npy,,y.npy': empty argument");
  CHECK(err("tokens:t.bin,dtype=uint8", {.seq = 4}) == "--data 'tokens:t.bin,dtype=uint8': dtype 'uint8' is not uint16 or uint32");
  CHECK(err("tokens:t.bin") == "--data 'tokens:t.bin': tokens need a sequence length > 0 (seq)");
  CHECK(err("tokens:dtype=uint32,t.bin", {.seq = 4}) == "--data 'tokens:dtype=uint32,t.bin': 't.bin' follows an option (positional arguments come first)");
}
