// SPDX-License-Identifier: Apache-2.0
// Gradient buckets (compiler/parallel/gradient_bucket.h) on their own: which gradients may share
// one, its padding, and the nodes that pack and unpack it. The e2e test (parallel_test.cpp) trains
// with them against one reduction per weight, bit for bit.
#include <catch2/catch.hpp>

#include "compiler/parallel/gradient_bucket.h"

using namespace of::compiler;

TEST_CASE("gradient bucket: only an all-reduce on one placement of few bytes a hop shares a bucket", "[compiler]") {
  const Placement four{{0, 1, 2, 3}, {4}}, mesh{{0, 1, 2, 3}, {2, 2}}, other{{4, 5, 6, 7}, {4}};
  const uint64_t small = 4096;
  CHECK(bucketable(small, 1, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}));
  CHECK(bucketable(small, 2, Layout{mesh, {Sbp::P(), Sbp::P()}}, Layout{mesh, {Sbp::B(), Sbp::B()}}));
  CHECK(bucketable(small, 2, Layout{mesh, {Sbp::P(), Sbp::B()}}, Layout{mesh, {Sbp::B(), Sbp::B()}}));
  // A large gradient goes alone, unless its route has hops enough (many ranks).
  CHECK(bucketable(kBucketBytesPerHop, 1, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}));
  CHECK_FALSE(bucketable(kBucketBytesPerHop + 1, 1, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}));
  CHECK(bucketable(16 * kBucketBytesPerHop, 16, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}));
  CHECK_FALSE(bucketable(16 * kBucketBytesPerHop + 1, 16, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::B()}}));
  // Anything but a whole tensor on every device after goes alone.
  CHECK_FALSE(bucketable(small, 2, Layout{four, {Sbp::P()}}, Layout{four, {Sbp::S(0)}}));                   // ZeRO's reduce-scatter
  CHECK_FALSE(bucketable(small, 2, Layout{mesh, {Sbp::P(), Sbp::S(0)}}, Layout{mesh, {Sbp::B(), Sbp::S(0)}}));  // split over tp
  CHECK_FALSE(bucketable(small, 1, Layout{four, {Sbp::B()}}, Layout{four, {Sbp::B()}}));                    // nothing to reduce
  CHECK_FALSE(bucketable(small, 1, Layout{four, {Sbp::P()}}, Layout{other, {Sbp::B()}}));                   // another stage
}

TEST_CASE("gradient bucket: zeros pad it to a multiple of its devices", "[compiler]") {
  CHECK(bucket_tail(10, 4) == 2);
  CHECK(bucket_tail(8, 4) == 0);
  CHECK(bucket_tail(3, 8) == 5);
  CHECK(bucket_tail(1030, 1024) == 1018);
  CHECK(bucket_tail(7, 1) == 0);
}

TEST_CASE("gradient bucket: packed by one Concat of one-axis views, unpacked by one Split", "[compiler]") {
  Graph g;
  std::vector<ValueId> grads;
  for (const of::Shape& s : {of::Shape{2, 3}, of::Shape{5}, of::Shape{4, 1}}) {
    const ValueId v = g.add_value("grad" + std::to_string(grads.size()));
    g.values[size_t(v)].desc = of::TensorDesc{s, of::DType::f32};
    g.values[size_t(v)].known = true;
    g.inputs.push_back(v);
    grads.push_back(v);
  }
  const ValueId bucket = pack_bucket(g, grads, 1, 3, "b/pack");
  REQUIRE(g.nodes.size() == 1);
  const Node& pack = g.nodes[0];
  CHECK(pack.kernel == "concat");
  CHECK(pack.device == 3);
  CHECK(pack.kernel_attrs.get_int("axis", -1) == 0);
  CHECK(pack.kernel_attrs.get_int("tail", 0) == 1);
  CHECK(pack.runtime_inputs == grads);
  CHECK(pack.runtime_views == std::vector<of::Shape>{{6}, {5}, {4}});
  CHECK(g.values[size_t(bucket)].desc.shape == of::Shape{16});
  const std::vector<ValueId> parts = unpack_bucket(g, bucket, {6, 5, 4}, 1, 3, "b/unpack");
  REQUIRE(g.nodes.size() == 2);
  const Node& split = g.nodes[1];
  CHECK(split.kernel == "split");
  CHECK(split.kernel_attrs.get_int("tail", 0) == 1);
  CHECK(split.runtime_inputs == std::vector<ValueId>{bucket});
  REQUIRE(parts.size() == 3);
  CHECK(split.outputs == parts);
  for (size_t k = 0; k < parts.size(); ++k) {
    CHECK(g.values[size_t(parts[k])].producer == 1);
    CHECK(g.values[size_t(parts[k])].desc.shape == of::Shape{std::vector<int64_t>{6, 5, 4}[k]});
  }
  // A bucket its devices split evenly has no tail attribute at all (the kernels' default).
  const ValueId even = pack_bucket(g, {grads[1]}, 0, 0, "c/pack");
  CHECK_FALSE(g.nodes.back().kernel_attrs.has("tail"));
  CHECK(g.values[size_t(even)].desc.shape == of::Shape{5});
  g.outputs = parts;
  CHECK_NOTHROW(verify(g, "gradient bucket test"));
}
