// SPDX-License-Identifier: Apache-2.0
// ofrun's default workers and kernel threads (runtime/thread_counts.h).
#include <catch2/catch.hpp>

#include "runtime/thread_counts.h"

using of::runtime::thread_counts;

namespace {

of::plan::Plan plan_of(std::vector<of::plan::DeviceRef> devices) {
  of::plan::Plan p;
  p.devices = std::move(devices);
  return p;
}

}  // namespace

TEST_CASE("thread_counts: training one CPU device in one process gets one worker with every core for its kernels", "[runtime]") {
  const of::plan::Plan one = plan_of({{0, 0, 0}});
  CHECK(thread_counts(one, true, -1, 0, 0, 8).workers == 1);
  CHECK(thread_counts(one, true, -1, 0, 0, 8).kernel == 8);
  // Either count given: the other keeps its plain default.
  CHECK(thread_counts(one, true, -1, 2, 0, 8).workers == 2);
  CHECK(thread_counts(one, true, -1, 2, 0, 8).kernel == 1);
  CHECK(thread_counts(one, true, -1, 0, 3, 8).workers == 8);
  CHECK(thread_counts(one, true, -1, 0, 3, 8).kernel == 3);
  // Devices that share the cores, a GPU, a rank of a multi-process run: a worker per core.
  for (const auto& [p, rank] : {std::pair{plan_of({{0, 0, 0}, {0, 0, 1}}), -1}, std::pair{plan_of({{0, 1, 0}}), -1},
                                std::pair{one, 0}}) {
    CHECK(thread_counts(p, true, rank, 0, 0, 8).workers == 8);
    CHECK(thread_counts(p, true, rank, 0, 0, 8).kernel == 1);
  }
  CHECK(thread_counts(one, true, -1, 0, 0, 0).kernel == 1);  // cores unknown
  // Inference streams pieces through the stages, which workers overlap.
  CHECK(thread_counts(one, false, -1, 0, 0, 8).workers == 8);
  CHECK(thread_counts(one, false, -1, 0, 0, 8).kernel == 1);
  CHECK(of::runtime::usable_cores() >= 1);
}
