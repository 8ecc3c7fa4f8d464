// SPDX-License-Identifier: Apache-2.0
// The predicted step time on plans built here, with costs chosen so that every act's cost is a
// round number: a chain is the sum of its acts, two devices (two workers) with free slots overlap
// to the busier one, one slot serialises them again, a weight's next version waits for its readers, and
// micro-batch accumulation acts once per piece while its update acts once per step.
#include <catch2/catch.hpp>

#include "compiler/parallel/step_time.h"
#include "kernels/kernel_work.h"

namespace of::compiler {
namespace {

// Rates that make a memory-bound kernel over n floats cost n * 8 ns per input+output float.
MachineCosts round_costs() {
  MachineCosts c;
  c.rates = {1e9, 1e9, 1e9, 4.0 / 8e-9};  // matrix 1 GFLOP/s; memory: 4 bytes per 8 ns
  c.task_overhead_s = 1e-6;
  c.copy_bytes_per_s = 4.0 / 8e-9;
  c.rank_bytes_per_s = 4.0 / 80e-9;
  c.rank_latency_s = 1e-5;
  return c;
}

struct Builder {
  plan::Plan p;
  std::vector<TensorDesc> tensors;

  explicit Builder(int devices, int ranks = 1) {
    for (int d = 0; d < devices; ++d) p.devices.push_back(plan::DeviceRef{d * ranks / devices, 0, d});
  }
  // A register of `floats` floats written by `producer`.
  plan::RegstId regst(plan::TaskId producer, int64_t floats, int32_t slots = 2, bool persistent = false) {
    plan::Regst r;
    r.id = plan::RegstId(p.regsts.size());
    r.producer = producer;
    r.slots = slots;
    r.persistent = persistent;
    r.blobs.push_back(plan::Blob{int32_t(tensors.size()), TensorDesc{{floats}, DType::f32}, 0, uint64_t(floats) * 4});
    tensors.push_back(TensorDesc{{floats}, DType::f32});
    p.tasks[size_t(producer)].out_regsts.push_back(r.id);
    p.regsts.push_back(r);
    return r.id;
  }
  plan::TaskId task(plan::TaskKind kind, const std::string& kernel, int device, std::vector<plan::RegstId> reads) {
    plan::Task t;
    t.id = plan::TaskId(p.tasks.size());
    t.kind = kind;
    t.kernel = kernel;
    t.name = kernel.empty() ? "task" : kernel;
    t.device = device;
    for (plan::RegstId r : reads) {
      t.inputs.push_back(plan::TaskInput{plan::InputKind::regst, r, 0, {}});
      t.in_regsts.push_back(r);
      p.regsts[size_t(r)].consumers.push_back(t.id);
    }
    p.tasks.push_back(t);
    return t.id;
  }
  StepPrediction predict(int64_t pieces_per_step = 1) { return predict_step(PlayedPlan{p, tensors, pieces_per_step}, round_costs()); }
};

TEST_CASE("step time: a chain on one device is the sum of its acts", "[compiler]") {
  Builder b(1);
  const plan::TaskId src = b.task(plan::TaskKind::source, "", 0, {});
  const plan::RegstId x = b.regst(src, 1000);                                   // 1 us overhead + 8 us copy
  const plan::TaskId relu = b.task(plan::TaskKind::compute, "relu", 0, {x});
  const plan::RegstId y = b.regst(relu, 1000);                                  // 1 us + 2000 floats * 8 ns
  b.task(plan::TaskKind::sink, "", 0, {y});                                     // 1 us
  const StepPrediction s = b.predict();
  CHECK(s.step_seconds == Approx(9e-6 + 17e-6 + 1e-6).epsilon(1e-9));
  REQUIRE(s.busy_seconds.size() == 1);
  CHECK(s.busy_seconds[0] == Approx(s.step_seconds).epsilon(1e-9));
}

TEST_CASE("step time: devices overlap when slots let pieces stream and serialise with one slot", "[compiler]") {
  for (int32_t slots : {2, 1}) {
    Builder b(2);
    const plan::TaskId src = b.task(plan::TaskKind::source, "", 0, {});
    const plan::RegstId x = b.regst(src, 10, slots);            // 1.08 us on device 0
    const plan::TaskId a = b.task(plan::TaskKind::compute, "relu", 0, {x});
    const plan::RegstId ya = b.regst(a, 10000, slots);          // 1 us + 40040 bytes: 81.08 us on device 0
    const plan::TaskId c = b.task(plan::TaskKind::compute, "relu", 1, {ya});
    const plan::RegstId z = b.regst(c, 10, slots);              // 81.08 us on device 1
    b.task(plan::TaskKind::sink, "", 1, {z});                   // 1 us on device 1
    const StepPrediction s = b.predict();
    REQUIRE(s.busy_seconds.size() == 2);
    CHECK(s.busy_seconds[0] == Approx(82.16e-6).epsilon(1e-9));
    CHECK(s.busy_seconds[1] == Approx(82.08e-6).epsilon(1e-9));
    INFO("slots " << slots);
    if (slots == 2) {
      CHECK(s.step_seconds == Approx(82.16e-6).epsilon(0.01));  // the busier device's work, the other's overlapping it
    } else {
      // a may write piece n + 1 only after c has read piece n: the devices take turns.
      CHECK(s.step_seconds == Approx(2 * 81.08e-6 + 1.08e-6).epsilon(0.02));
    }
  }
}

TEST_CASE("step time: a transfer between ranks pays the latency and the ranks' bandwidth", "[compiler]") {
  Builder b(2, 2);
  const plan::TaskId src = b.task(plan::TaskKind::source, "", 0, {});
  const plan::RegstId x = b.regst(src, 1000);
  const plan::TaskId copy = b.task(plan::TaskKind::transfer, "", 1, {x});
  b.regst(copy, 1000);
  CHECK(act_seconds(PlayedPlan{b.p, b.tensors, 1}, b.p.tasks[size_t(copy)], round_costs()) == Approx(1e-6 + 1e-5 + 80e-6).epsilon(1e-9));
}

TEST_CASE("step time: a transfer between a host and its GPU pays the host link, and GPUs are workers of their own", "[compiler]") {
  Builder b(3);
  b.p.devices[0].kind = 1;  // two GPUs and their host
  b.p.devices[1].kind = 1;
  const plan::TaskId src = b.task(plan::TaskKind::source, "", 2, {});
  const plan::RegstId x = b.regst(src, 1000);
  const plan::TaskId h2d = b.task(plan::TaskKind::transfer, "", 0, {x});
  const plan::RegstId on_gpu = b.regst(h2d, 1000);
  MachineCosts c = round_costs();
  c.host_bytes_per_s = 4.0 / 40e-9;  // 4 bytes per 40 ns: 40 us for 1000 floats
  CHECK(act_seconds(PlayedPlan{b.p, b.tensors, 1}, b.p.tasks[size_t(h2d)], c) == Approx(1e-6 + 40e-6).epsilon(1e-9));
  // Two GPUs' work after it overlaps (each its own worker), however few CPU workers the rank has.
  const plan::TaskId d2d = b.task(plan::TaskKind::transfer, "", 1, {on_gpu});
  const plan::RegstId there = b.regst(d2d, 1000);
  CHECK(act_seconds(PlayedPlan{b.p, b.tensors, 1}, b.p.tasks[size_t(d2d)], c) == Approx(1e-6 + 8e-6).epsilon(1e-9));  // between GPUs: the copy rate
  const plan::TaskId a = b.task(plan::TaskKind::compute, "relu", 0, {on_gpu});
  const plan::RegstId ya = b.regst(a, 1000);
  const plan::TaskId d = b.task(plan::TaskKind::compute, "relu", 1, {there});
  const plan::RegstId yd = b.regst(d, 1000);
  b.task(plan::TaskKind::sink, "", 2, {ya, yd});
  const StepPrediction s = predict_step(PlayedPlan{b.p, b.tensors, 1}, c);
  REQUIRE(s.busy_seconds.size() == 3);
  CHECK(s.busy_seconds[0] == Approx(41e-6 + 17e-6).epsilon(1e-9));
  CHECK(s.busy_seconds[1] == Approx(9e-6 + 17e-6).epsilon(1e-9));
}

// A source writing A [64,32] and W [32,16], and a gemm task reading both into [64,16]: its id.
plan::TaskId gemm_64x32x16(Builder& b) {
  const plan::TaskId src = b.task(plan::TaskKind::source, "", 0, {});
  const plan::RegstId a = b.regst(src, 64 * 32);
  const plan::RegstId w = b.regst(src, 32 * 16);
  b.p.regsts[size_t(a)].blobs[0].desc.shape = {64, 32};
  b.p.regsts[size_t(w)].blobs[0].desc.shape = {32, 16};
  const plan::TaskId mm = b.task(plan::TaskKind::compute, "gemm", 0, {a, w});
  b.regst(mm, 64 * 16);
  b.p.regsts.back().blobs[0].desc.shape = {64, 16};
  return mm;
}

TEST_CASE("step time: a matrix product costs its flops at the matrix rate", "[compiler]") {
  Builder b(1);
  const plan::TaskId mm = gemm_64x32x16(b);
  CHECK(act_seconds(PlayedPlan{b.p, b.tensors, 1}, b.p.tasks[size_t(mm)], round_costs()) == Approx(1e-6 + 2.0 * 64 * 16 * 32 / 1e9).epsilon(1e-9));
}

TEST_CASE("step time: a kernel measured on the task's exact shapes costs what was measured, other shapes their rate", "[compiler]") {
  Builder b(1);
  const plan::TaskId mm = gemm_64x32x16(b);
  b.p.tasks[size_t(mm)].attrs.set_int("trans_b", 0);
  MachineCosts c = round_costs();
  c.kernels["gemm"] = KernelRate{2e9, 5e-6};
  const double by_rate = 1e-6 + 5e-6 + 2.0 * 64 * 16 * 32 / 2e9;
  const PlayedPlan pp{b.p, b.tensors, 1};
  CHECK(act_seconds(pp, b.p.tasks[size_t(mm)], c) == Approx(by_rate).epsilon(1e-9));
  // Another shape, or the same shapes under other attributes, measured: still the rate.
  c.shapes[kernel_shape_key("gemm", b.p.tasks[size_t(mm)].attrs, {TensorDesc{{32, 32}}, TensorDesc{{32, 16}}}, {TensorDesc{{32, 16}}})] = 1.0;
  Attrs tb;
  tb.set_int("trans_b", 1);
  c.shapes[kernel_shape_key("gemm", tb, {TensorDesc{{64, 32}}, TensorDesc{{32, 16}}}, {TensorDesc{{64, 16}}})] = 1.0;
  CHECK(act_seconds(pp, b.p.tasks[size_t(mm)], c) == Approx(by_rate).epsilon(1e-9));
  // These very shapes measured: the act is that measurement and the act's overhead.
  const std::string key = kernel_shape_key("gemm", b.p.tasks[size_t(mm)].attrs, {TensorDesc{{64, 32}}, TensorDesc{{32, 16}}}, {TensorDesc{{64, 16}}});
  CHECK(key == "gemm trans_b=0 : f32[64,32] f32[32,16] -> f32[64,16]");
  c.shapes[key] = 3e-4;
  CHECK(act_seconds(pp, b.p.tasks[size_t(mm)], c) == Approx(1e-6 + 3e-4).epsilon(1e-9));
}

TEST_CASE("step time: beside every core busy, a kernel costs its shared measurement, else its time alone slowed as its kind", "[compiler]") {
  Builder b(1);
  const plan::TaskId mm = gemm_64x32x16(b);
  const PlayedPlan pp{b.p, b.tensors, 1};
  MachineCosts c = round_costs();
  c.shared_cores = 2;
  c.shared_rates = c.rates;
  c.shared_rates[size_t(kernels::WorkKind::matrix)] = 0.25e9;  // a quarter of the matrix rate beside the other core
  const double alone = 2.0 * 64 * 16 * 32 / 1e9;
  CHECK(act_seconds(pp, b.p.tasks[size_t(mm)], c) == Approx(1e-6 + alone).epsilon(1e-9));
  CHECK(act_seconds(pp, b.p.tasks[size_t(mm)], c, true) == Approx(1e-6 + 4 * alone).epsilon(1e-9));
  const plan::Task& t = b.p.tasks[size_t(mm)];
  const std::string key = kernel_shape_key("gemm", t.attrs, {TensorDesc{{64, 32}}, TensorDesc{{32, 16}}}, {TensorDesc{{64, 16}}});
  c.shapes[key] = 3e-4;  // measured alone only: that, slowed as matrix work is
  CHECK(act_seconds(pp, t, c, true) == Approx(1e-6 + 12e-4).epsilon(1e-9));
  c.shared_shapes[key] = 5e-4;  // measured beside the other core too
  CHECK(act_seconds(pp, t, c, true) == Approx(1e-6 + 5e-4).epsilon(1e-9));
  CHECK(act_seconds(pp, t, c) == Approx(1e-6 + 3e-4).epsilon(1e-9));
}

TEST_CASE("step time: two devices of one rank busy at once slow each other as the costs measured, one device never", "[compiler]") {
  // Per device: source -> relu (10 floats in, 10000 out: 81.08 us alone) -> sink.
  auto chains = [](int devices) {
    Builder b(devices);
    for (int d = 0; d < devices; ++d) {
      const plan::TaskId src = b.task(plan::TaskKind::source, "", d, {});
      const plan::TaskId relu = b.task(plan::TaskKind::compute, "relu", d, {b.regst(src, 10)});
      b.task(plan::TaskKind::sink, "", d, {b.regst(relu, 10000)});
    }
    return b;
  };
  MachineCosts shared = round_costs();
  shared.shared_cores = 2;
  shared.shared_rates = shared.rates;
  shared.shared_rates[size_t(kernels::WorkKind::memory)] /= 2;  // memory-bound work at half speed beside the other core
  for (int devices : {1, 2}) {
    INFO(devices << " devices");
    Builder b = chains(devices);
    const double alone = predict_step(PlayedPlan{b.p, b.tensors, 1}, round_costs()).step_seconds;
    const double beside = predict_step(PlayedPlan{b.p, b.tensors, 1}, shared).step_seconds;
    CHECK(alone == Approx(1.08e-6 + 81.08e-6 + 1e-6).epsilon(0.05));  // the chains overlap
    if (devices == 1) {
      CHECK(beside == Approx(alone).epsilon(1e-12));  // one worker: nothing beside it
    } else {
      // The chains run at once, relu beside relu: at least one of them pays its shared cost.
      CHECK(beside > alone + 70e-6);
      CHECK(beside < alone + 2 * 82e-6);
    }
  }
}

TEST_CASE("step time: accumulation acts per micro-batch, the update once per step, and readers wait for the new version", "[compiler]") {
  Builder b(1);
  const plan::TaskId src = b.task(plan::TaskKind::source, "", 0, {});
  const plan::RegstId x = b.regst(src, 1000);               // 9 us per piece
  // forward reads x and the weight (written by the update below).
  const plan::TaskId fwd = b.task(plan::TaskKind::compute, "relu", 0, {x});
  const plan::RegstId g = b.regst(fwd, 1000);               // 17 us per piece (reads x only: the weight is not an input of relu's work here)
  b.p.regsts[size_t(g)].acts_per_piece = 4;                 // summed over 4 micro-batches
  const plan::TaskId upd = b.task(plan::TaskKind::compute, "relu", 0, {g});
  const plan::RegstId w = b.regst(upd, 1000, 1, true);      // 17 us per step
  b.p.regsts[size_t(w)].pieces_per_version = 4;
  b.p.tasks[size_t(fwd)].in_regsts.push_back(w);
  b.p.regsts[size_t(w)].consumers.push_back(fwd);
  b.task(plan::TaskKind::sink, "", 0, {g});                 // 1 us per step
  const StepPrediction s = b.predict(4);
  // One device, everything serial: 4 pieces of source and forward, one update and one sink.
  CHECK(s.step_seconds == Approx(4 * (9e-6 + 17e-6) + 17e-6 + 1e-6).epsilon(1e-9));
}

TEST_CASE("kernel work: gemm and conv count multiply-adds, others bytes", "[compiler]") {
  Attrs none;
  const auto gemm = kernels::kernel_work("gemm", none, {TensorDesc{{8, 4}}, TensorDesc{{4, 2}}}, {TensorDesc{{8, 2}}});
  CHECK(gemm.kind == kernels::WorkKind::matrix);
  CHECK(gemm.flops == 2.0 * 8 * 2 * 4);
  Attrs ta;
  ta.set_int("trans_a", 1);
  CHECK(kernels::kernel_work("gemm", ta, {TensorDesc{{4, 8}}, TensorDesc{{4, 2}}}, {TensorDesc{{8, 2}}}).flops == 2.0 * 8 * 2 * 4);
  const auto conv = kernels::kernel_work("conv", none, {TensorDesc{{1, 3, 8, 8}}, TensorDesc{{16, 3, 3, 3}}}, {TensorDesc{{1, 16, 8, 8}}});
  CHECK(conv.kind == kernels::WorkKind::convolution);
  CHECK(conv.flops == 2.0 * 16 * 64 * 27);
  const auto add = kernels::kernel_work("add", none, {TensorDesc{{10}}, TensorDesc{{10}, DType::i64}}, {TensorDesc{{10}}});
  CHECK(add.kind == kernels::WorkKind::memory);
  CHECK(add.bytes == 40 + 80 + 40);
}

}  // namespace
}  // namespace of::compiler
