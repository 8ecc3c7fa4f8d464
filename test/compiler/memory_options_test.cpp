// SPDX-License-Identifier: Apache-2.0
// memory_options: the plan compiled again with each memory option it does not use, and each
// device's peak then; describe_largest, the words ofc prints.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/memory_options.h"

using namespace of::compiler;

namespace {

std::string mlp() { return std::string(OF_FIXTURES_DIR) + "/mlp.onnx"; }

CompileOptions adam_dp2() {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.optimizer = "adam";
  o.devices = 2;
  o.dp = 2;
  return o;
}

uint64_t largest(const std::vector<uint64_t>& peaks) { return *std::max_element(peaks.begin(), peaks.end()); }

}  // namespace

TEST_CASE("memory_options: each option not in use compiled again, with every device's peak", "[compiler]") {
  const CompileOptions o = adam_dp2();
  const Compilation c = compile_model(mlp(), o);
  std::vector<uint64_t> now;
  for (const auto& a : c.tasks.arenas) now.push_back(a.bytes);
  const auto options = memory_options(mlp(), o);
  REQUIRE(options.size() == 6);
  CHECK(options[0].flags == "--recompute");
  CHECK(options[1].flags == "--zero 3");
  CHECK(options[2].flags == "--recompute --zero 3");
  CHECK(options[3].flags == "--share-order tight");
  CHECK(options[4].flags == "--recompute --zero 3 --share-order tight");
  CHECK(options[5].flags == "--zero 1");
  for (const auto& m : options) {
    INFO(m.flags);
    REQUIRE(m.peaks.size() == now.size());
    CHECK(largest(m.peaks) <= largest(now));
  }
  // ZeRO 3 splits Adam's weights and moments (3 x 3.2 MiB of mlp.onnx's) over 2 devices: at least
  // a third of that leaves each device, gathered copies counted.
  CHECK(largest(options[1].peaks) + (3ull << 20) < largest(now));
  CHECK(largest(options[2].peaks) <= largest(options[1].peaks));
  // The tight order lets the gradients' reductions give their bytes back sooner.
  CHECK(largest(options[3].peaks) < largest(now));
  CHECK(largest(options[4].peaks) <= largest(options[2].peaks));
  // ZeRO 1 splits the moments only (the weights stay whole): between plain dp and stage 3.
  CHECK(largest(options[5].peaks) + (1ull << 20) < largest(now));
  CHECK(largest(options[5].peaks) > largest(options[1].peaks));
  // Exactly what compiling with the flag gives.
  CompileOptions zero = o;
  zero.zero = 3;
  const Compilation z = compile_model(mlp(), zero);
  for (size_t i = 0; i < z.tasks.arenas.size(); ++i) CHECK(options[1].peaks[i] == z.tasks.arenas[i].bytes);

  // Options already in use are not offered again; one device has no ZeRO; inference has none.
  CompileOptions recomputing = o;
  recomputing.recompute = true;
  const auto rest = memory_options(mlp(), recomputing);
  REQUIRE(rest.size() == 4);
  CHECK(rest[0].flags == "--zero 3");
  CHECK(rest[1].flags == "--share-order tight");
  CHECK(rest[2].flags == "--zero 3 --share-order tight");
  CHECK(rest[3].flags == "--zero 1");
  CompileOptions one = o;
  one.devices = one.dp = 1;
  const auto single = memory_options(mlp(), one);
  REQUIRE(single.size() == 3);
  CHECK(single[0].flags == "--recompute");
  CHECK(single[1].flags == "--share-order tight");
  CHECK(single[2].flags == "--recompute --share-order tight");
  CompileOptions infer;
  CHECK(memory_options(mlp(), infer).empty());
}

TEST_CASE("memory_options: describe_largest names each option's largest device and marks those that fit", "[compiler]") {
  const std::vector<of::plan::MemoryOption> options{{"--recompute", {3u << 20, 5u << 20}}, {"--zero 3", {2u << 20, 1u << 20}}};
  CHECK(describe_largest(options, 0) == "5.0 MiB with --recompute, 2.0 MiB with --zero 3");
  CHECK(describe_largest(options, 4u << 20) == "5.0 MiB with --recompute, 2.0 MiB with --zero 3 (fits)");
}
