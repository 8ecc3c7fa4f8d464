// SPDX-License-Identifier: Apache-2.0
#include "runtime/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <map>
#include <memory>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <fmt/core.h>

#include "kernels/kernel_work.h"
#include "kernels/registry.h"

namespace of::runtime {

namespace {

using Clock = std::chrono::steady_clock;

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

// One kernel ready to run on buffers of its own (aligned, filled with `fill`), as calibration
// times it; `fresh` are the inputs a run's producers have just written (in the caches when an
// act starts).
struct KernelBench {
  KernelBench(const std::string& kernel, const Attrs& attrs, const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
              const std::string& name, float fill, const std::vector<bool>& fresh_inputs = {}) {
    kernels::KernelConfig cfg{attrs, in, out, name};
    k = kernels::make_kernel(kernel, kernels::DeviceKind::cpu, out.at(0).dtype, cfg);
    auto buffer = [&](const TensorDesc& d, float value) {
      const size_t bytes = std::max<size_t>(64, (size_t(d.bytes()) + 63) / 64 * 64);
      buffers.emplace_back(std::aligned_alloc(64, bytes), &std::free);
      if (d.dtype == DType::f32 && value != 0)
        std::fill_n(static_cast<float*>(buffers.back().get()), bytes / sizeof(float), value);
      else
        std::memset(buffers.back().get(), 0, bytes);
      return buffers.back().get();
    };
    for (size_t i = 0; i < in.size(); ++i) {
      ins.push_back(buffer(in[i], fill));
      if (i < fresh_inputs.size() && fresh_inputs[i]) fresh.emplace_back(const_cast<void*>(ins.back()), size_t(in[i].bytes()));
    }
    for (const TensorDesc& d : out) outs.push_back(buffer(d, 0));
  }
  void run() { k->run(kernels::RunCtx{}, ins.data(), outs.data()); }
  // As in a run: the acts between pushed the rest out of the caches (`evict`, untimed).
  void refresh(std::vector<uint8_t>& evict) {
    std::memset(evict.data(), int(++round), evict.size());
    for (const auto& [ptr, bytes] : fresh) std::memset(ptr, 0, bytes);
  }

  std::unique_ptr<kernels::Kernel> k;
  std::vector<std::unique_ptr<void, decltype(&std::free)>> buffers;
  std::vector<const void*> ins;
  std::vector<void*> outs;
  std::vector<std::pair<void*, size_t>> fresh;
  uint8_t round = 0;
};

// The cores a host's devices share: what `shared_cores` measures with.
int32_t host_cores() { return int32_t(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 64)); }

// Seconds of one act of each bench's kernel with all of them running at once, a thread each, in
// lockstep (the median over threads and repeats, within about `budget` seconds): what as many
// devices of one rank doing the same work see of the bandwidth and caches they share. With
// `evict`, the caches are pushed out (each thread its share) and fresh inputs written before
// each act, untimed.
double shared_seconds(std::vector<KernelBench>& benches, double budget, bool evict) {
  const size_t n = benches.size();
  std::barrier sync(static_cast<std::ptrdiff_t>(n));
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> times(n);
  const auto start = Clock::now();
  auto body = [&](size_t i) {
    std::vector<uint8_t> cache(evict ? std::max<size_t>(size_t(16) << 20, (size_t(64) << 20) / n) : 0);
    benches[i].run();  // warm
    for (int round = 0;; ++round) {
      if (evict) benches[i].refresh(cache);
      sync.arrive_and_wait();
      const auto t0 = Clock::now();
      benches[i].run();
      times[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      if (i == 0) stop = round >= 2 && (std::chrono::duration<double>(Clock::now() - start).count() > budget || round >= 10000);
      sync.arrive_and_wait();
      if (stop) break;
    }
  };
  std::vector<std::thread> others;
  for (size_t i = 1; i < n; ++i) others.emplace_back(body, i);
  body(0);
  for (std::thread& t : others) t.join();
  std::vector<double> all;
  for (const auto& v : times) all.insert(all.end(), v.begin(), v.end());
  std::nth_element(all.begin(), all.begin() + long(all.size() / 2), all.end());
  return all[all.size() / 2];
}

// The rate `kernel` gets its work (kernel_work: flop/s, or bytes/s for memory-bound kernels)
// done at on inputs of `in` and outputs of `out` filled with small values: alone, and with
// `shared` threads running it at once (shared < 2: alone again).
struct Rates {
  double alone, shared;
};
Rates kernel_rates(const char* kernel, const Attrs& attrs, const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out, double budget,
                   int32_t shared) {
  const std::string name = std::string("calibrate/") + kernel;
  KernelBench alone(kernel, attrs, in, out, name, 0.01f);
  const double s = median_seconds(budget, [&] { alone.run(); });
  const double work = kernels::kernel_work(kernel, attrs, in, out).measure();
  if (shared < 2) return Rates{work / s, work / s};
  std::vector<KernelBench> benches;
  benches.reserve(size_t(shared));
  for (int32_t i = 0; i < shared; ++i) benches.emplace_back(kernel, attrs, in, out, name, 0.01f);
  // Sharing never speeds work up: a faster reading is noise.
  return Rates{work / s, work / std::max(s, shared_seconds(benches, budget, false))};
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
  c.shared_cores = host_cores();
  Attrs none;
  // Matrix products of a layer as training runs it (a batch of 64, width 1024): the forward
  // product, the input's gradient (B transposed) and the weight's (A transposed), at their
  // combined rate; beside the other cores, at the forward product's slowdown.
  {
    Attrs tb, ta;
    tb.set_int("trans_b", 1);
    ta.set_int("trans_a", 1);
    const double flops = 2.0 * 64 * 1024 * 1024;
    const Rates forward = kernel_rates("gemm", none, {f32({64, 1024}), f32({1024, 1024})}, {f32({64, 1024})}, budget / 3, c.shared_cores);
    const double seconds = flops / forward.alone +
                           flops / kernel_rates("gemm", tb, {f32({64, 1024}), f32({1024, 1024})}, {f32({64, 1024})}, budget / 3, 1).alone +
                           flops / kernel_rates("gemm", ta, {f32({64, 1024}), f32({64, 1024})}, {f32({1024, 1024})}, budget / 3, 1).alone;
    c.rates[size_t(kernels::WorkKind::matrix)] = 3 * flops / seconds;
    c.shared_rates[size_t(kernels::WorkKind::matrix)] = 3 * flops / seconds * forward.shared / forward.alone;
  }
  auto set = [&](kernels::WorkKind kind, Rates r) {
    c.rates[size_t(kind)] = r.alone;
    c.shared_rates[size_t(kind)] = r.shared;
  };
  Attrs conv;
  conv.set_ints("kernel_shape", {3, 3});
  conv.set_ints("pads", {1, 1, 1, 1});
  set(kernels::WorkKind::convolution,
      kernel_rates("conv", conv, {f32({8, 32, 28, 28}), f32({64, 32, 3, 3}), f32({64})}, {f32({8, 64, 28, 28})}, budget, c.shared_cores));
  Attrs lstm;
  lstm.set_int("hidden_size", 128);
  lstm.set_int("has_bias", 1);
  set(kernels::WorkKind::recurrent,
      kernel_rates("lstm", lstm, {f32({16, 32, 64}), f32({1, 512, 64}), f32({1, 512, 128}), f32({1, 1024})},
                   {f32({16, 1, 32, 128}), f32({1, 32, 128}), f32({1, 32, 128})}, budget, c.shared_cores));
  // Element-wise work on tensors larger than the caches: what memory-bound kernels run at.
  const Shape big = {1 << 22};
  set(kernels::WorkKind::memory, kernel_rates("add", none, {f32(big), f32(big)}, {f32(big)}, budget, c.shared_cores));
  const Rates copy = kernel_rates("copy", none, {f32(big)}, {f32(big)}, budget, c.shared_cores);
  c.copy_bytes_per_s = copy.alone / 2;  // bytes copied, not read + written
  c.shared_copy_bytes_per_s = copy.shared / 2;
  c.host_bytes_per_s = c.copy_bytes_per_s;  // no GPU measured: a host copy
  // An act receives a message per register it reads and sends one per register it writes; two
  // messages is the typical act of a chain.
  c.task_overhead_s = 2 * message_seconds(budget);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char date[32] = {};
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::gmtime(&now));
  c.measured_on = fmt::format("{}, {} UTC, one kernel thread, also beside {} others (links between ranks: built-in, not measured)", host,
                              date, c.shared_cores - 1);
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
  // Beside every core busy too, even for a plan of one device: the same model's plans on several
  // devices of a rank run many of its shapes (every optimizer update), and ofc --auto weighs them
  // from one calibration.
  const int32_t shared = c.shared_cores;
  std::map<std::string, std::vector<Sample>> samples;
  int64_t measured = 0;
  std::map<std::string, double> seen;  // this plan's shapes: each measured once (devices repeat them)
  std::vector<uint8_t> cache(size_t(64) << 20);  // larger than the last-level caches of our machines
  for (const plan::Task& t : p.tasks) {
    if (t.kind != plan::TaskKind::compute || t.out_regsts.empty()) continue;
    std::vector<TensorDesc> in, out;
    std::vector<bool> fresh;
    for (const plan::TaskInput& i : t.inputs) {
      in.push_back(plan::input_desc(p, i));
      fresh.push_back(i.kind == plan::InputKind::regst);
    }
    out = plan::output_descs(p, t);
    const std::string key = kernel_shape_key(t.kernel, t.attrs, in, out);
    if (seen.count(key)) continue;
    // Zeroed buffers: what a kernel reads as indices is 0, always in range. As in a run, what the
    // task's producers have just written (its register inputs) is in the caches, the rest
    // (weights, the slots it writes) has been pushed out by the acts between.
    KernelBench bench(t.kernel, t.attrs, in, out, t.name, 0, fresh);
    const double s = median_seconds(per_task, [&] { bench.run(); }, [&] { bench.refresh(cache); });
    const kernels::KernelWork w = kernels::kernel_work(t.kernel, t.attrs, in, out);
    samples[t.kernel].push_back(Sample{w.measure(), s});
    seen[key] = s;
    // A copy per core of a large shape's buffers (an embedding table on a many-core host) may not
    // fit: such a shape is slowed as its kind of work is instead (compiler/parallel/step_time.h).
    uint64_t bytes = 0;
    for (const TensorDesc& d : in) bytes += uint64_t(d.bytes());
    for (const TensorDesc& d : out) bytes += uint64_t(d.bytes());
    if (shared > 1 && bytes * uint64_t(shared) <= (uint64_t(2) << 30)) {
      std::vector<KernelBench> benches;
      benches.reserve(size_t(shared));
      for (int32_t i = 0; i < shared; ++i) benches.emplace_back(t.kernel, t.attrs, in, out, t.name, 0, fresh);
      c.shared_shapes[key] = std::max(s, shared_seconds(benches, per_task, true));
    }
    ++measured;
  }
  for (const auto& [name, v] : samples) c.kernels[name] = fit(v);
  for (const auto& [key, s] : seen) c.shapes[key] = s;
  return measured;
}

}  // namespace of::runtime
