// SPDX-License-Identifier: Apache-2.0
// Plans on GPUs (--devices N:cuda): compute on the GPUs; sources, the sink and checkpoints on each
// rank's host device; what crosses between them goes through transfer tasks; every kernel exists
// for its device's kind; the predicted step time uses the GPU figures.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/error.h"
#include "compiler/compile.h"

using namespace of::compiler;

namespace {

std::string fixture(const char* name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

CompileOptions on_gpus(int32_t ranks, int32_t devices) {
  CompileOptions o;
  o.devices = devices;
  o.ranks = ranks;
  o.dp = devices;
  o.device_kind = 1;
  o.costs = of::builtin_cuda_costs();
  return o;
}

int8_t kind_of(const Compilation& c, const Task& t) { return c.tasks.devices[size_t(t.device)].kind; }

}  // namespace

TEST_CASE("gpu plan: compute on the GPU, source and sink on the host, transfers between", "[compiler]") {
  const Compilation c = compile_model(fixture("mlp.onnx"), on_gpus(1, 1));
  const TaskGraph& tg = c.tasks;
  REQUIRE(tg.devices.size() == 2);
  CHECK(tg.devices[0].kind == 1);
  CHECK(tg.devices[1].kind == 0);  // the host, after the GPUs
  CHECK(tg.arenas.size() == 2);
  int transfers_in = 0, transfers_out = 0, computes = 0;
  for (const Task& t : tg.tasks) {
    switch (t.kind) {
      case TaskKind::source:
      case TaskKind::sink: CHECK(kind_of(c, t) == 0); break;
      case TaskKind::compute: CHECK(kind_of(c, t) == 1); ++computes; break;
      case TaskKind::transfer: {
        const int32_t from = tg.arenas[size_t(tg.regsts[size_t(t.in_regsts.at(0))].arena)].device;
        CHECK(tg.devices[size_t(from)].kind != kind_of(c, t));
        (kind_of(c, t) == 1 ? transfers_in : transfers_out)++;
        break;
      }
      default: FAIL("unexpected task " << t.name);
    }
  }
  CHECK(computes == 3);
  CHECK(transfers_in == 1);   // the batch, host to GPU
  CHECK(transfers_out == 1);  // the logits, GPU to host
  // Every register lives where its producer runs.
  for (const Regst& r : tg.regsts) CHECK(tg.arenas[size_t(r.arena)].device == tg.tasks[size_t(r.producer)].device);
  CHECK(tg.prediction.step_seconds > 0);
}

TEST_CASE("gpu plan: training keeps weights on the GPU and checkpoints from the host", "[compiler]") {
  CompileOptions o = on_gpus(1, 1);
  o.train = true;
  o.loss = "cross_entropy";
  o.optimizer = "adamw";
  const Compilation c = compile_model(fixture("mlp.onnx"), o);
  const TaskGraph& tg = c.tasks;
  const auto snap = std::find_if(tg.tasks.begin(), tg.tasks.end(), [](const Task& t) { return t.kind == TaskKind::snapshot; });
  REQUIRE(snap != tg.tasks.end());
  CHECK(kind_of(c, *snap) == 0);
  int weights = 0;
  for (const Regst& r : tg.regsts)
    if (r.persistent) {
      CHECK(tg.devices[size_t(tg.arenas[size_t(r.arena)].device)].kind == 1);
      ++weights;
    }
  CHECK(weights == 6);
  for (const Task& t : tg.tasks)
    if (t.kind == TaskKind::compute) CHECK(kind_of(c, t) == 1);
}

TEST_CASE("gpu plan: the same plan on CPU devices has no host devices and no extra transfers", "[compiler]") {
  CompileOptions o = on_gpus(1, 1);
  o.device_kind = 0;
  const Compilation c = compile_model(fixture("mlp.onnx"), o);
  CHECK(c.tasks.devices.size() == 1);
  CHECK(std::none_of(c.tasks.tasks.begin(), c.tasks.tasks.end(), [](const Task& t) { return t.kind == TaskKind::transfer; }));
}

TEST_CASE("gpu plan: each rank has its host device, and its sources and snapshots are there", "[compiler]") {
  CompileOptions o = on_gpus(2, 2);
  o.train = true;
  o.loss = "cross_entropy";
  const Compilation c = compile_model(fixture("mlp.onnx"), o);
  const TaskGraph& tg = c.tasks;
  REQUIRE(tg.devices.size() == 4);
  CHECK((tg.devices[2].kind == 0 && tg.devices[2].rank == 0));
  CHECK((tg.devices[3].kind == 0 && tg.devices[3].rank == 1));
  for (const Task& t : tg.tasks)
    if (t.kind == TaskKind::source || t.kind == TaskKind::snapshot || t.kind == TaskKind::sink) {
      CHECK(kind_of(c, t) == 0);
      if (t.kind == TaskKind::sink) CHECK(tg.devices[size_t(t.device)].rank == 0);
    }
}
