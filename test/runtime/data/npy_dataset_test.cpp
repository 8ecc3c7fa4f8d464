// SPDX-License-Identifier: Apache-2.0
// .npy datasets: per-sample shapes, i32/i64 labels, and the mismatches refused by name.
#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "common/error.h"
#include "common/npy.h"
#include "runtime/data/dataset.h"
#include "runtime/data/npy_dataset.h"

using namespace of;
using namespace of::runtime::data;

TEST_CASE("npy_dataset: features keep their per-sample shape, i32 and i64 labels read as i64", "[runtime]") {
  const std::string fx = "/tmp/of_npy_ds_x.npy", fy = "/tmp/of_npy_ds_y.npy";
  std::vector<float> x(3 * 2 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
  write_npy(fx, DType::f32, {3, 2, 2}, x.data());
  write_npy(fy, DType::i32, {3}, std::vector<int32_t>{4, 0, 7}.data());
  std::unique_ptr<Dataset> d = open_npy_dataset(fx, fy);
  REQUIRE(d->size() == 3);
  CHECK(d->features().shape == Shape{2, 2});
  CHECK(d->features().dtype == DType::f32);
  CHECK(d->labels().shape == Shape{});
  CHECK(d->labels().dtype == DType::i64);
  float f[4];
  int64_t y = -1;
  d->read(2, f, &y);
  CHECK(y == 7);
  CHECK(f[0] == 4.0f);
  CHECK(f[3] == 5.5f);

  write_npy(fy, DType::i64, {3}, std::vector<int64_t>{1, 2, 3}.data());
  write_npy(fx, DType::f32, {3}, x.data());  // rank 1: one scalar feature per sample
  d = open_npy_dataset(fx, fy);
  CHECK(d->features().shape == Shape{});
  d->read(1, f, &y);
  CHECK(f[0] == 0.5f);
  CHECK(y == 2);
  std::remove(fx.c_str());
  std::remove(fy.c_str());
}

TEST_CASE("npy_dataset: f32 labels are targets read as they are, any value, per-sample shape kept", "[runtime]") {
  const std::string fx = "/tmp/of_npy_ds_t_x.npy", fy = "/tmp/of_npy_ds_t_y.npy";
  std::vector<float> x(3 * 2, 1.0f);
  write_npy(fx, DType::f32, {3, 2}, x.data());
  const std::vector<float> t{0.0f, 1.0f, -2.5f, 1e30f, 0.5f, 1.0f};  // [3, 2]: multi-hot or regression targets
  write_npy(fy, DType::f32, {3, 2}, t.data());
  std::unique_ptr<Dataset> d = open_npy_dataset(fx, fy, 10);  // no class range for targets
  CHECK(d->labels().dtype == DType::f32);
  CHECK(d->labels().shape == Shape{2});
  float f[2], y[2];
  d->read(1, f, y);
  CHECK(y[0] == -2.5f);
  CHECK(y[1] == 1e30f);
  std::remove(fx.c_str());
  std::remove(fy.c_str());
}

TEST_CASE("npy_dataset: wrong dtypes, ranks, counts and labels are refused by name", "[runtime]") {
  const std::string fx = "/tmp/of_npy_ds_bad_x.npy", fy = "/tmp/of_npy_ds_bad_y.npy";
  std::vector<float> x(8, 1.0f);
  write_npy(fx, DType::f32, {4, 2}, x.data());
  write_npy(fy, DType::i64, {3}, std::vector<int64_t>{0, 1, 2}.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fy + ": holds 3 labels but " + fx + " holds 4 samples"));
  write_npy(fy, DType::i64, {4}, std::vector<int64_t>{0, 1, -2, 3}.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fy + ": label -2 at index 2 is negative"));
  write_npy(fy, DType::i64, {4}, std::vector<int64_t>{0, 1, 2, 10}.data());
  CHECK_NOTHROW(open_npy_dataset(fx, fy));
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy, 10), Catch::Contains(fy + ": label 10 at index 3 is out of range (num_classes 10)"));
  // The loss's ignore_index may stand anywhere: torch's default -100, or a void class such as 255.
  CHECK_NOTHROW(open_npy_dataset(fx, fy, 10, 10));
  write_npy(fy, DType::i64, {4}, std::vector<int64_t>{0, -100, 2, 3}.data());
  CHECK_NOTHROW(open_npy_dataset(fx, fy, 10));
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy, 10, 255), Catch::Contains(fy + ": label -100 at index 1 is negative"));
  write_npy(fy, DType::u8, {4}, std::vector<uint8_t>{0, 1, 2, 3}.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy),
                    Catch::Contains(fy + ": labels must be class ids, i64 (<i8) or i32 (<i4), or f32 (<f4) targets, not u8"));
  write_npy(fy, DType::i64, {2, 2}, std::vector<int64_t>{0, 1, 2, 3}.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fy + ": holds 2 labels but " + fx + " holds 4 samples"));
  // Labels [n, k]: k class ids per sample (a sequence model's per-position labels).
  write_npy(fy, DType::i64, {4, 2}, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}.data());
  auto seq = open_npy_dataset(fx, fy);
  CHECK(seq->labels().shape == Shape{2});
  std::vector<float> feats(2);
  std::vector<int64_t> labs(2);
  seq->read(2, feats.data(), labs.data());
  CHECK(labs == std::vector<int64_t>{4, 5});
  write_npy(fy, DType::i64, {}, std::vector<int64_t>{0}.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fy + ": labels must be [n] or [n, ...], not a scalar"));

  write_npy(fy, DType::i64, {4}, std::vector<int64_t>{0, 1, 2, 3}.data());
  write_npy(fx, DType::i64, {4}, std::vector<int64_t>{0, 1, 2, 3}.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fx + ": features must be f32 (<f4), not i64"));
  write_npy(fx, DType::f32, {}, x.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fx + ": features must be [n, ...], not a scalar"));
  write_npy(fx, DType::f32, {0, 3}, x.data());
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::Contains(fx + ": holds no samples (shape [0,3])"));
  write_npy(fx, DType::f32, {4, 0}, x.data());
  // A sample with no features is refused by the dataset (the .npy itself is valid).
  CHECK_THROWS_WITH(open_npy_dataset(fx, fy), Catch::StartsWith(fx + ": "));
  CHECK_THROWS_WITH(open_npy_dataset("/tmp/of_no_such.npy", fy), Catch::Contains("/tmp/of_no_such.npy: cannot open"));
  std::remove(fx.c_str());
  std::remove(fy.c_str());
}
