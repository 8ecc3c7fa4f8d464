// SPDX-License-Identifier: Apache-2.0
#include "runtime/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include <caf/all.hpp>
#include <fmt/core.h>

#include "kernels/kernel_work.h"
#include "kernels/registry.h"

namespace of::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// Writes a buffer larger than the last-level caches of the machines we run on.
void evict_caches() {
  static std::vector<uint8_t> big(size_t(64) << 20);
  static uint8_t round = 0;
  std::memset(big.data(), ++round, big.size());
}

// The median of repeated runs of `once`, repeated until `budget` seconds have passed (at least
// 3 runs); `before` runs ahead of each, untimed.
template <typename F, typename G = void (*)()>
double median_seconds(double budget, F once, G before = [] {}) {
  std::vector<double> times;
  const auto start = Clock::now();
  once();  // warm: first-touch pages, oneDNN's primitive cache
  while (times.size() < 3 || (std::chrono::duration<double>(Clock::now() - start).count() < budget && times.size() < 10000)) {
    before();
    const auto t0 = Clock::now();
    once();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
  return times[times.size() / 2];
}

// Runs `kernel` on inputs of `in` and outputs of `out` (filled with small values) and returns the
// rate its work (kernel_work) gets done at: flop/s, or bytes/s for memory-bound kernels.
double kernel_rate(const char* kernel, const Attrs& attrs, const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, double budget) {
  kernels::KernelConfig cfg{attrs, in, out, std::string("calibrate/") + kernel};
  std::unique_ptr<kernels::Kernel> k = kernels::make_kernel(kernel, kernels::DeviceKind::cpu, DType::f32, cfg);
  std::vector<std::vector<float>> buffers;
  std::vector<const void*> ins;
  std::vector<void*> outs;
  for (const TensorDesc& d : in) buffers.emplace_back(size_t(numel(d.shape)), 0.01f);
  for (const TensorDesc& d : out) buffers.emplace_back(size_t(numel(d.shape)), 0.0f);
  for (size_t i = 0; i < in.size(); ++i) ins.push_back(buffers[i].data());
  for (size_t i = 0; i < out.size(); ++i) outs.push_back(buffers[in.size() + i].data());
  const kernels::RunCtx ctx;
  const double s = median_seconds(budget, [&] { k->run(ctx, ins.data(), outs.data()); });
  const kernels::KernelWork w = kernels::kernel_work(kernel, attrs, in, out);
  return w.measure() / s;
}

TensorDesc f32(Shape s) { return TensorDesc{std::move(s), DType::f32}; }

// One of two actors passing a counter back and forth: each message carries the count and the
// sender; the message that reaches `rounds` goes to `done`. (Spawned with arguments, as the task
// actors are: CAF 0.17 dereferences a null argument tuple for a function actor spawned without
// any, which UBSan reports.)
caf::behavior bouncer(caf::event_based_actor* self, int rounds, caf::actor done) {
  return {[=](int n, const caf::actor& from) {
    if (n >= rounds)
      self->send(done, n);
    else
      self->send(from, n + 1, caf::actor{self});
  }};
}

// Seconds of one message between two event-based actors of one CAF system, as task actors
// exchange them, over many messages.
double message_seconds(double budget) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  constexpr int kMessages = 100000;
  double best = 1;
  const auto start = Clock::now();
  for (int repeat = 0; repeat < 5; ++repeat) {
    caf::scoped_actor waiter{sys};
    auto a = sys.spawn(bouncer, kMessages, caf::actor{waiter});
    auto b = sys.spawn(bouncer, kMessages, caf::actor{waiter});
    const auto t0 = Clock::now();
    caf::anon_send(a, 0, b);
    waiter->receive([](int) {});
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / kMessages);
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
    if (std::chrono::duration<double>(Clock::now() - start).count() > budget) break;
  }
  return best;
}

}  // namespace

MachineCosts calibrate(double budget) {
  kernels::set_kernel_threads(1);
  MachineCosts c = builtin_costs();
  Attrs none;
  // Matrix products of a layer as training runs it (a batch of 64, width 1024): the forward
  // product, the input's gradient (B transposed) and the weight's (A transposed), at their
  // combined rate.
  {
    Attrs tb, ta;
    tb.set_int("trans_b", 1);
    ta.set_int("trans_a", 1);
    const double flops = 2.0 * 64 * 1024 * 1024;
    const double seconds = flops / kernel_rate("gemm", none, {f32({64, 1024}), f32({1024, 1024})}, {f32({64, 1024})}, budget / 3) +
                           flops / kernel_rate("gemm", tb, {f32({64, 1024}), f32({1024, 1024})}, {f32({64, 1024})}, budget / 3) +
                           flops / kernel_rate("gemm", ta, {f32({64, 1024}), f32({64, 1024})}, {f32({1024, 1024})}, budget / 3);
    c.rates[size_t(kernels::WorkKind::matrix)] = 3 * flops / seconds;
  }
  Attrs conv;
  conv.set_ints("kernel_shape", {3, 3});
  conv.set_ints("pads", {1, 1, 1, 1});
  c.rates[size_t(kernels::WorkKind::convolution)] =
      kernel_rate("conv", conv, {f32({8, 32, 28, 28}), f32({64, 32, 3, 3}), f32({64})}, {f32({8, 64, 28, 28})}, budget);
  Attrs lstm;
  lstm.set_int("hidden_size", 128);
  lstm.set_int("has_bias", 1);
  c.rates[size_t(kernels::WorkKind::recurrent)] =
      kernel_rate("lstm", lstm, {f32({16, 32, 64}), f32({1, 512, 64}), f32({1, 512, 128}), f32({1, 1024})},
                  {f32({16, 1, 32, 128}), f32({1, 32, 128}), f32({1, 32, 128})}, budget);
  // Element-wise work on tensors larger than the caches: what memory-bound kernels run at.
  const Shape big = {1 << 22};
  c.rates[size_t(kernels::WorkKind::memory)] = kernel_rate("add", none, {f32(big), f32(big)}, {f32(big)}, budget);
  c.copy_bytes_per_s = kernel_rate("copy", none, {f32(big)}, {f32(big)}, budget) / 2;  // bytes copied, not read + written
  c.host_bytes_per_s = c.copy_bytes_per_s;  // no GPU measured: a host copy
  // An act receives a message per register it reads and sends one per register it writes; two
  // messages is the typical act of a chain.
  c.task_overhead_s = 2 * message_seconds(budget);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char date[32] = {};
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::gmtime(&now));
  c.measured_on = fmt::format("{}, {} UTC, one kernel thread (links between ranks: built-in, not measured)", host, date);
  return c;
}

namespace {

struct Sample {
  double work, seconds;
};

KernelRate fit(const std::vector<Sample>& v) {
  double sw = 0, st = 0;
  for (const Sample& x : v) sw += x.work, st += x.seconds;
  const double n = double(v.size()), mw = sw / n, mt = st / n;
  double cov = 0, var = 0;
  for (const Sample& x : v) cov += (x.work - mw) * (x.seconds - mt), var += (x.work - mw) * (x.work - mw);
  if (v.size() >= 2 && var > 0 && cov > 0) {
    const double slope = cov / var, fixed = mt - slope * mw;
    if (fixed >= 0) return KernelRate{1 / slope, fixed};
  }
  return KernelRate{sw / st, 0};
}

}  // namespace

int64_t calibrate_kernels(const plan::Plan& p, MachineCosts& c, double per_task) {
  kernels::set_kernel_threads(1);
  std::map<std::string, std::vector<Sample>> samples;
  int64_t measured = 0;
  std::map<std::string, double> seen;  // this plan's shapes: each measured once (devices repeat them)
  for (const plan::Task& t : p.tasks) {
    if (t.kind != plan::TaskKind::compute || t.out_regsts.empty()) continue;
    std::vector<TensorDesc> in, out;
    for (const plan::TaskInput& i : t.inputs) in.push_back(plan::input_desc(p, i));
    out = plan::output_descs(p, t);
    const std::string key = kernel_shape_key(t.kernel, t.attrs, in, out);
    if (seen.count(key)) continue;
    kernels::KernelConfig cfg{t.attrs, in, out, t.name};
    std::unique_ptr<kernels::Kernel> k = kernels::make_kernel(t.kernel, kernels::DeviceKind::cpu, out.at(0).dtype, cfg);
    // Zeroed, aligned buffers: what a kernel reads as indices is 0, always in range.
    std::vector<std::unique_ptr<void, decltype(&std::free)>> buffers;
    std::vector<const void*> ins;
    std::vector<void*> outs;
    auto buffer = [&](const TensorDesc& d) {
      const size_t bytes = std::max<size_t>(64, (size_t(d.bytes()) + 63) / 64 * 64);
      buffers.emplace_back(std::aligned_alloc(64, bytes), &std::free);
      std::memset(buffers.back().get(), 0, bytes);
      return buffers.back().get();
    };
    for (const TensorDesc& d : in) ins.push_back(buffer(d));
    for (const TensorDesc& d : out) outs.push_back(buffer(d));
    const kernels::RunCtx ctx;
    // As in a run: what the task's producers have just written (its register inputs) is in the
    // caches, the rest (weights, the slots it writes) has been pushed out by the acts between.
    // So before each timed act (untimed): evict everything, then write the register inputs again.
    std::vector<std::pair<void*, size_t>> fresh;
    for (size_t i = 0; i < t.inputs.size(); ++i)
      if (t.inputs[i].kind == plan::InputKind::regst) fresh.emplace_back(const_cast<void*>(ins[i]), size_t(in[i].bytes()));
    auto as_in_a_run = [&] {
      evict_caches();
      for (const auto& [ptr, bytes] : fresh) std::memset(ptr, 0, bytes);
    };
    const double s = median_seconds(per_task, [&] { k->run(ctx, ins.data(), outs.data()); }, as_in_a_run);
    const kernels::KernelWork w = kernels::kernel_work(t.kernel, t.attrs, in, out);
    samples[t.kernel].push_back(Sample{w.measure(), s});
    seen[key] = s;
    ++measured;
  }
  for (const auto& [name, v] : samples) c.kernels[name] = fit(v);
  for (const auto& [key, s] : seen) c.shapes[key] = s;
  return measured;
}

}  // namespace of::runtime
