// SPDX-License-Identifier: Apache-2.0
// Parallelize's gradient buckets (compiler/parallel/gradient_bucket.h) on a model built here: which
// updates wait in which bucket, in the order the backward pass makes their gradients; the first
// bucket fills at 1 MiB, the next at --bucket-mb. (The e2e test trains them bit for bit.)
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "compiler/compile.h"
#include "compiler/deep_mlp.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

// The gradient all-reduces of a plan, in order: (tensor, consumer) of each backward boxing.
std::vector<std::pair<std::string, std::string>> all_reduces(const Compilation& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& b : c.parallel.boxings)
    if (b.backward && b.kind == "all-reduce") out.emplace_back(b.tensor, b.consumer);
  return out;
}

// How many updates a bucket's consumer line names ("K updates, first ... last").
int members(const std::string& consumer) { return std::stoi(consumer.substr(0, consumer.find(' '))); }

}  // namespace

TEST_CASE("gradient buckets: the backward pass's first 1 MiB share a bucket, the rest the next ones", "[compiler]") {
  // 12 layers of 256 x 256: each weight's gradient is 256 KiB, at most what one hop (dp 2 on one
  // rank) lets share a bucket; each bias's 1 KiB.
  const std::string model = write_deep_mlp(12, 256, 1024);  // a batch that makes dp plain dp
  CompileOptions o;
  o.loss = "mse";
  o.train = true;
  o.optimizer = "sgd:lr=0.01";
  o.devices = o.dp = 2;
  const Compilation bucketed = compile_model(model, o);
  o.bucket_bytes = 0;
  const Compilation alone = compile_model(model, o);
  o.bucket_bytes = 512 << 10;
  const Compilation halves = compile_model(model, o);
  std::filesystem::remove(model);

  CHECK(all_reduces(alone).size() == 24);
  const auto b = all_reduces(bucketed);
  REQUIRE(b.size() == 2);
  CHECK(b[0].first == "grad_bucket0");
  CHECK(b[1].first == "grad_bucket1");
  // The last layer's gradients come first; four weights (and the biases between) pass 1 MiB.
  INFO(b[0].second << " | " << b[1].second);
  CHECK(b[0].second.find("update/l11.") != std::string::npos);
  CHECK(b[0].second.find("update/l8.weight") != std::string::npos);
  CHECK(b[1].second.find("update/l0.") != std::string::npos);
  CHECK(members(b[0].second) + members(b[1].second) == 24);
  CHECK(members(b[0].second) >= 7);
  CHECK(members(b[0].second) <= 8);
  // 512 KiB buckets: two weights each (and the biases between), the first bucket as small; the
  // last bias, alone in the last one, is reduced as if it had not waited.
  const auto h = all_reduces(halves);
  CHECK(h.size() >= 6);
  for (const auto& [tensor, consumer] : h) {
    INFO(tensor << " for " << consumer);
    if (tensor.rfind("grad_bucket", 0) == 0) {
      CHECK(members(consumer) <= 4);
    } else {
      CHECK(consumer == "update/l0.bias");
    }
  }
}
