// SPDX-License-Identifier: Apache-2.0
// The plans ofc compiles fold into copies (schemas/plan_copies.h) without losing a field: a
// data-parallel plan's devices run the same tasks, so the file stores each op's task about twice
// (device 0, which also holds the sink and snapshot, and one run for the others), not once per
// device; and a plan of tensor and pipeline parallelism comes back equal too.
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "test/compiler/fixture_mlp.h"
#include "schemas/plan_codec.h"
#include "schemas/plan_copies.h"
#include "schemas/plan_format.h"
#include "test/runtime/plan/plan_diff.h"

using namespace of::compiler;

namespace {

Compilation compile_mlp(int32_t dp, int32_t tp, int32_t pp) { return compile_fixture_mlp("adamw", 1, dp, tp, pp); }

// The plan as the file stores it, decoded again: the same, field by field.
void check_round_trip(of::plan::Plan p) {
  p.version = of::plan_format::kVersion;  // the writer's (finish_plan) to set
  const std::vector<uint8_t> bytes = of::plan::encode(p);
  const of::plan::Plan q = of::plan::decode(bytes.data(), bytes.size(), "p.ofp");
  CHECK(of::test::plan_diff(p, q) == "");
}

}  // namespace

TEST_CASE("plan copies: a data-parallel plan stores its ops' tasks about twice, however many devices", "[compiler]") {
  size_t stored_4 = 0, tasks_4 = 0;
  for (int32_t dp : {4, 8}) {
    INFO("dp " << dp);
    const Compilation c = compile_mlp(dp, 1, 1);
    const of::plan::Plan& p = c.tasks;
    check_round_trip(p);
    const size_t stored = of::plan::find_runs(p.tasks).size();
    // Every task of a model op (its name ends in "@device") on devices 1..dp-1 is a copy of the one
    // on device 1; what stays apart is device 0's, the sources and the collective parts.
    size_t op_tasks = 0, op_runs = 0;
    for (const of::plan::Run& r : of::plan::find_runs(p.tasks)) {
      const of::plan::Task& t = p.tasks[r.first];
      if (t.kind != TaskKind::compute || t.name.find("boxing") != std::string::npos) continue;
      op_tasks += size_t(r.copies.count);
      ++op_runs;
    }
    CHECK(op_runs * size_t(dp) <= 2 * op_tasks);  // about two entries per op, not dp
    if (dp == 4) {
      stored_4 = stored;
      tasks_4 = p.tasks.size();
    } else {
      // Four more devices add a quarter of the tasks they run to the file, or less.
      CHECK(4 * (stored - stored_4) <= p.tasks.size() - tasks_4);
    }
  }
}

TEST_CASE("plan copies: tensor-parallel and pipelined plans come back from the file unchanged", "[compiler]") {
  for (const auto& [dp, tp, pp] : {std::tuple{2, 2, 1}, std::tuple{1, 2, 2}, std::tuple{2, 1, 2}}) {
    INFO("dp " << dp << " tp " << tp << " pp " << pp);
    check_round_trip(compile_mlp(dp, tp, pp).tasks);
  }
}
