// SPDX-License-Identifier: Apache-2.0
// batch_norm_train against a double reference (normalized output, saved statistics, the
// unbiased batch variance), batch_norm_stats_update (running statistics, in place, and
// num_batches_tracked), and batch_norm_train_grad against double central differences of
// sum(y * w) through the batch statistics.
#include <algorithm>
#include <cmath>

#include "grad_check.h"
#include "kernels/batch_norm_calls.h"
#include "kernels/registry.h"

namespace of::kernels {
namespace {

struct Stats {
  std::vector<double> y, mean, var;  // var: biased, as used for normalizing
};

// x [N,C,*] normalized with its own per-channel statistics, then scaled and shifted.
Stats reference(const std::vector<double>& x, const Shape& s, const std::vector<double>& scale,
                const std::vector<double>& bias, double eps) {
  const int64_t c = s[1], inner = numel(s) / (s[0] * s[1]);
  const double m = double(s[0] * inner);
  Stats r{std::vector<double>(x.size()), std::vector<double>(size_t(c), 0.0),
          std::vector<double>(size_t(c), 0.0)};
  auto channel = [&](size_t i) { return size_t((int64_t(i) / inner) % c); };
  for (size_t i = 0; i < x.size(); ++i) r.mean[channel(i)] += x[i] / m;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - r.mean[channel(i)];
    r.var[channel(i)] += d * d / m;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = channel(i);
    r.y[i] = (x[i] - r.mean[ch]) / std::sqrt(r.var[ch] + eps) * scale[ch] + bias[ch];
  }
  return r;
}

// The four outputs of one batch_norm_train run.
struct Outputs {
  std::vector<float> y, mean, invstd, batch_var;
};

Outputs run_forward(const Attrs& attrs, const Shape& s, const std::vector<float>& x,
                    const std::vector<float>& scale, const std::vector<float>& bias) {
  const size_t c = size_t(s[1]);
  Outputs o{std::vector<float>(x.size()), std::vector<float>(c), std::vector<float>(c), std::vector<float>(c)};
  const Shape v{s[1]};
  testing::run_kernel("batch_norm_train", attrs, testing::f32_descs({s, v, v}), testing::f32_descs({s, v, v, v}),
                      {x.data(), scale.data(), bias.data()},
                      {o.y.data(), o.mean.data(), o.invstd.data(), o.batch_var.data()});
  return o;
}

TEST_CASE("batch_norm_train: y and saved statistics match a double reference", "[kernels]") {
  std::mt19937 rng(41);
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{4, 3}, Shape{2, 5, 7}, Shape{2, 2, 2, 3, 2}}) {
    INFO(shape_str(s));
    const int64_t c = s[1];
    const auto x = testing::random_floats(numel(s), rng, -3, 5);
    const auto scale = testing::random_floats(c, rng, 0.5f, 2);
    const auto bias = testing::random_floats(c, rng);
    Attrs attrs;
    attrs.set_float("epsilon", 1e-3f);
    const Outputs o = run_forward(attrs, s, x, scale, bias);
    const Stats r = reference(testing::to_double(x), s, testing::to_double(scale),
                              testing::to_double(bias), double(1e-3f));
    testing::check_close(o.y, r.y);
    testing::check_close(o.mean, r.mean);
    std::vector<double> invstd;
    for (double v : r.var) invstd.push_back(1 / std::sqrt(v + double(1e-3f)));
    testing::check_close(o.invstd, invstd);
  }
}

// The forward as split-batch-norm plans it: batch_norm_stats, then batch_norm_apply (with and
// without its fused ReLU).
Outputs run_split_forward(const Attrs& attrs, const Shape& s, const std::vector<float>& x, const std::vector<float>& scale,
                          const std::vector<float>& bias, bool relu) {
  const size_t c = size_t(s[1]);
  Outputs o{std::vector<float>(x.size()), std::vector<float>(c), std::vector<float>(c), std::vector<float>(c)};
  const Shape v{s[1]};
  testing::run_kernel("batch_norm_stats", attrs, testing::f32_descs({s}), testing::f32_descs({v, v, v}), {x.data()},
                      {o.mean.data(), o.invstd.data(), o.batch_var.data()});
  Attrs apply;
  if (relu) apply.set_str("activation", "relu");
  testing::run_kernel("batch_norm_apply", apply, testing::f32_descs({s, v, v, v, v}), testing::f32_descs({s}),
                      {x.data(), scale.data(), bias.data(), o.mean.data(), o.invstd.data()}, {o.y.data()});
  return o;
}

TEST_CASE("batch_norm_stats then batch_norm_apply: the statistics of batch_norm_train and y of the double reference", "[kernels]") {
  std::mt19937 rng(47);
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{4, 3}, Shape{2, 5, 7}}) {
    INFO(shape_str(s));
    const int64_t c = s[1];
    const auto x = testing::random_floats(numel(s), rng, -3, 5);
    const auto scale = testing::random_floats(c, rng, 0.5f, 2);
    const auto bias = testing::random_floats(c, rng);
    Attrs attrs;
    attrs.set_float("epsilon", 1e-3f);
    const Outputs whole = run_forward(attrs, s, x, scale, bias);
    const Outputs split = run_split_forward(attrs, s, x, scale, bias, false);
    CHECK(split.mean == whole.mean);  // the same sums, in the same order
    CHECK(split.invstd == whole.invstd);
    CHECK(split.batch_var == whole.batch_var);
    const Stats r = reference(testing::to_double(x), s, testing::to_double(scale), testing::to_double(bias), double(1e-3f));
    testing::check_close(split.y, r.y);
    std::vector<double> relu_y;
    for (double y : r.y) relu_y.push_back(std::max(y, 0.0));
    testing::check_close(run_split_forward(attrs, s, x, scale, bias, true).y, relu_y);
  }
}

TEST_CASE("batch_norm_train: scale 1 and bias 0 give per-channel mean 0 and variance 1",
          "[kernels]") {
  std::mt19937 rng(43);
  const Shape s{4, 3, 5, 5};
  auto x = testing::random_floats(numel(s), rng, -2, 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] += float(10 * ((i / 25) % 3));  // offset channels
  const Outputs o = run_forward(Attrs{}, s, x, {1, 1, 1}, {0, 0, 0});
  for (int64_t ch = 0; ch < 3; ++ch) {
    double sum = 0, sq = 0;
    const double m = 4 * 25;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 25; ++i) {
        const double v = o.y[size_t((b * 3 + ch) * 25 + i)];
        sum += v;
        sq += v * v;
      }
    INFO("channel " << ch);
    CHECK(std::fabs(sum / m) < 1e-5);
    CHECK(std::fabs(sq / m - sum * sum / (m * m) - 1) < 1e-4);
  }
}

TEST_CASE("batch_norm_stats_update: running statistics take the unbiased variance, in place", "[kernels]") {
  std::mt19937 rng(47);
  const Shape s{3, 2, 4};
  const Shape v{2};
  const double momentum = double(0.3f), m = 3 * 4;
  Attrs attrs;
  attrs.set_float("momentum", 0.3f);
  const std::vector<TensorDesc> ins = {{v, DType::f32}, {v, DType::f32}, {v, DType::f32}, {v, DType::f32}, {{}, DType::i64}};
  const std::vector<TensorDesc> outs = {{v, DType::f32}, {v, DType::f32}, {{}, DType::i64}};
  auto update = make_kernel("batch_norm_stats_update", DeviceKind::cpu, DType::f32, KernelConfig{attrs, ins, outs, "test_node"});
  std::vector<float> running_mean{0.5f, -1}, running_var{2, 0.25f};
  int64_t tracked = 7;
  std::vector<double> expect_mean = testing::to_double(running_mean), expect_var = testing::to_double(running_var);
  for (int round = 0; round < 2; ++round) {
    const auto x = testing::random_floats(numel(s), rng, -1 + 3 * round, 2 + round);
    const Outputs o = run_forward(Attrs{}, s, x, {1, 1}, {0, 0});
    const Stats r = reference(testing::to_double(x), s, {1, 1}, {0, 0}, 1e-5);
    for (size_t ch = 0; ch < 2; ++ch) {
      expect_mean[ch] = (1 - momentum) * expect_mean[ch] + momentum * r.mean[ch];
      expect_var[ch] = (1 - momentum) * expect_var[ch] + momentum * r.var[ch] * m / (m - 1);
    }
    testing::check_close(o.batch_var, std::vector<double>{r.var[0] * m / (m - 1), r.var[1] * m / (m - 1)});
    // Outputs are the very buffers of inputs 2, 3 and 4.
    const void* in[] = {o.mean.data(), o.batch_var.data(), running_mean.data(), running_var.data(), &tracked};
    void* out[] = {running_mean.data(), running_var.data(), &tracked};
    update->run({}, in, out);
    INFO("round " << round);
    testing::check_close(running_mean, expect_mean, 1e-6);
    testing::check_close(running_var, expect_var, 1e-6);
    CHECK(tracked == 8 + round);
  }
}

TEST_CASE("batch_norm_stats_update: default momentum is 0.1", "[kernels]") {
  const Shape s{2, 1, 2};
  const std::vector<float> x{1, 2, 3, 6};  // mean 3, biased var 3.5, unbiased 14/3
  const Outputs o = run_forward(Attrs{}, s, x, {1}, {0});
  CHECK(o.mean[0] == Approx(3));
  CHECK(o.invstd[0] == Approx(1 / std::sqrt(3.5 + 1e-5)));
  CHECK(o.batch_var[0] == Approx(14.0 / 3));
  std::vector<float> rm{1}, rv{2};
  int64_t tracked = 0;
  const std::vector<TensorDesc> ins = {{{1}, DType::f32}, {{1}, DType::f32}, {{1}, DType::f32}, {{1}, DType::f32}, {{}, DType::i64}};
  const std::vector<TensorDesc> outs = {{{1}, DType::f32}, {{1}, DType::f32}, {{}, DType::i64}};
  auto update = make_kernel("batch_norm_stats_update", DeviceKind::cpu, DType::f32, KernelConfig{Attrs{}, ins, outs, "n"});
  const void* in[] = {o.mean.data(), o.batch_var.data(), rm.data(), rv.data(), &tracked};
  void* out[] = {rm.data(), rv.data(), &tracked};
  update->run({}, in, out);
  CHECK(rm[0] == Approx(0.9 * 1 + 0.1 * 3));
  CHECK(rv[0] == Approx(0.9 * 2 + 0.1 * 14.0 / 3));
  CHECK(tracked == 1);
}

TEST_CASE("batch_norm_stats_update: cumulative=1 averages every batch so far, as momentum=None", "[kernels]") {
  // nn.BatchNorm1d(momentum=None): running = running + (batch - running) / num_batches_tracked,
  // the counter incremented first; from a fresh module's (0, 1, 0) the running mean after k
  // batches is the plain mean of their k means.
  Attrs attrs;
  attrs.set_float("momentum", 1.0f);  // what the export writes for momentum=None: not used
  attrs.set_int("cumulative", 1);
  const std::vector<TensorDesc> ins = {{{1}, DType::f32}, {{1}, DType::f32}, {{1}, DType::f32}, {{1}, DType::f32}, {{}, DType::i64}};
  const std::vector<TensorDesc> outs = {{{1}, DType::f32}, {{1}, DType::f32}, {{}, DType::i64}};
  auto update = make_kernel("batch_norm_stats_update", DeviceKind::cpu, DType::f32, KernelConfig{attrs, ins, outs, "n"});
  std::vector<float> rm{0}, rv{1};
  int64_t tracked = 0;
  const std::vector<float> means{4, -2, 7, 1}, vars{2, 6, 1, 3};
  double mean_sum = 0, var_sum = 0;
  for (size_t k = 0; k < means.size(); ++k) {
    const void* in[] = {&means[k], &vars[k], rm.data(), rv.data(), &tracked};
    void* out[] = {rm.data(), rv.data(), &tracked};
    update->run({}, in, out);
    mean_sum += means[k];
    var_sum += vars[k];
    INFO("batch " << k + 1);
    CHECK(tracked == int64_t(k + 1));
    CHECK(rm[0] == Approx(mean_sum / double(k + 1)).epsilon(1e-6));
    CHECK(rv[0] == Approx(var_sum / double(k + 1)).epsilon(1e-6));  // the first batch replaces the initial 1
  }
  // Resumed from a checkpoint at count 9: the next batch weighs 1/10.
  rm = {5};
  tracked = 9;
  const float m = 15, v = 1;
  const void* in[] = {&m, &v, rm.data(), rv.data(), &tracked};
  void* out[] = {rm.data(), rv.data(), &tracked};
  update->run({}, in, out);
  CHECK(rm[0] == Approx(6));
  Attrs bad = attrs;
  bad.set_int("cumulative", 2);
  CHECK_THROWS_WITH(make_kernel("batch_norm_stats_update", DeviceKind::cpu, DType::f32, KernelConfig{bad, ins, outs, "n"}),
                    Catch::Contains("cumulative is 2"));
}

TEST_CASE("batch_norm_stats_update: the calls of one module blend in call order, as that many updates do", "[kernels]") {
  // A BatchNorm called on two views a step (SimSiam's encoder) updates torch's running statistics
  // once per call: the one update with both calls' statistics equals two updates, bit for bit.
  std::mt19937 rng(61);
  const Shape c{5};
  for (const bool cumulative : {false, true}) {
    INFO("cumulative " << cumulative);
    Attrs attrs;
    attrs.set_float("momentum", 0.3f);
    if (cumulative) attrs.set_int("cumulative", 1);
    const auto stats = [&](size_t k) { return std::vector<TensorDesc>(k, {c, DType::f32}); };
    std::vector<TensorDesc> one = stats(4), three = stats(8);
    one.push_back({{}, DType::i64});
    three.push_back({{}, DType::i64});
    const std::vector<TensorDesc> outs = {{c, DType::f32}, {c, DType::f32}, {{}, DType::i64}};
    auto single = make_kernel("batch_norm_stats_update", DeviceKind::cpu, DType::f32, KernelConfig{attrs, one, outs, "n"});
    auto joint = make_kernel("batch_norm_stats_update", DeviceKind::cpu, DType::f32, KernelConfig{attrs, three, outs, "n"});
    std::vector<std::vector<float>> mean, var;
    for (int k = 0; k < 3; ++k) {
      mean.push_back(testing::random_floats(5, rng, -2, 2));
      var.push_back(testing::random_floats(5, rng, 0.1f, 3));
    }
    std::vector<float> rm = testing::random_floats(5, rng), rv = testing::random_floats(5, rng, 0.5f, 2);
    std::vector<float> rm_seq = rm, rv_seq = rv;
    int64_t tracked = 4, tracked_seq = 4;
    for (int k = 0; k < 3; ++k) {
      const void* in[] = {mean[size_t(k)].data(), var[size_t(k)].data(), rm_seq.data(), rv_seq.data(), &tracked_seq};
      void* out[] = {rm_seq.data(), rv_seq.data(), &tracked_seq};
      single->run({}, in, out);
    }
    const void* in[] = {mean[0].data(), var[0].data(), mean[1].data(), var[1].data(), mean[2].data(), var[2].data(), rm.data(), rv.data(), &tracked};
    void* out[] = {rm.data(), rv.data(), &tracked};
    joint->run({}, in, out);
    CHECK(rm == rm_seq);
    CHECK(rv == rv_seq);
    CHECK(tracked == 7);
    CHECK(tracked_seq == 7);
  }
  // Pairs and three running statistics, at most kMaxBatchNormCalls pairs.
  const std::vector<TensorDesc> outs = {{c, DType::f32}, {c, DType::f32}, {{}, DType::i64}};
  for (const int64_t pairs_and_one : {int64_t(3), kMaxBatchNormCalls + 1}) {
    std::vector<TensorDesc> in(size_t(2 * pairs_and_one + (pairs_and_one == 3 ? 1 : 2)), TensorDesc{c, DType::f32});
    in.push_back({{}, DType::i64});
    INFO(in.size() << " inputs");
    testing::check_rejects_descs("batch_norm_stats_update", Attrs{}, in, outs);
  }
}

TEST_CASE("batch_norm_train_grad: matches finite differences of sum(y*w)", "[kernels]") {
  std::mt19937 rng(53);
  const Shape s{2, 3, 2, 2};
  const Shape v{3};
  const auto x = testing::random_floats(numel(s), rng, -1, 2);
  const auto scale = testing::random_floats(3, rng, 0.5f, 2);
  const auto bias = testing::random_floats(3, rng);
  const auto w = testing::random_floats(numel(s), rng);
  const double eps = double(1e-5f);
  const Outputs o = run_forward(Attrs{}, s, x, scale, bias);

  std::vector<float> dx(x.size()), dscale(3), dbias(3);
  testing::run_kernel("batch_norm_train_grad", Attrs{}, testing::f32_descs({s, s, v, v, v}),
                      testing::f32_descs({s, v, v}),
                      {w.data(), x.data(), scale.data(), o.mean.data(), o.invstd.data()},
                      {dx.data(), dscale.data(), dbias.data()});

  const auto xd = testing::to_double(x), sd = testing::to_double(scale),
             bd = testing::to_double(bias), wd = testing::to_double(w);
  const testing::DoubleFn by_x = [&](const std::vector<double>& at) {
    return reference(at, s, sd, bd, eps).y;
  };
  const testing::DoubleFn by_scale = [&](const std::vector<double>& at) {
    return reference(xd, s, at, bd, eps).y;
  };
  const testing::DoubleFn by_bias = [&](const std::vector<double>& at) {
    return reference(xd, s, sd, at, eps).y;
  };
  SECTION("dx") { testing::check_grad(dx, testing::numeric_grad(by_x, xd, wd)); }
  SECTION("dscale") { testing::check_grad(dscale, testing::numeric_grad(by_scale, sd, wd)); }
  SECTION("dbias") { testing::check_grad(dbias, testing::numeric_grad(by_bias, bd, wd)); }
}

TEST_CASE("batch_norm_train: bad configs throw of::Error", "[kernels]") {
  const Shape x{2, 3, 4};
  const Shape c{3};
  testing::check_rejects("batch_norm_train", Attrs{}, {{3}, {3}, {3}}, {{3}, {3}, {3}, {3}});  // rank 1
  testing::check_rejects("batch_norm_train", Attrs{}, {x, c, {4}}, {x, c, c, c});              // bias [4]
  testing::check_rejects("batch_norm_train", Attrs{}, {x, c, c}, {x, c, c});                   // arity
  testing::check_rejects("batch_norm_train", Attrs{}, {x, c, c}, {{2, 3, 5}, c, c, c});        // y shape
  testing::check_rejects("batch_norm_train", Attrs{}, {{1, 3}, c, c}, {{1, 3}, c, c, c});      // 1 value/channel
  Attrs negative;
  negative.set_float("epsilon", -1);
  testing::check_rejects("batch_norm_train", negative, {x, c, c}, {x, c, c, c});
  testing::check_rejects("batch_norm_stats_update", Attrs{}, {c, c, c, c, c}, {c, c, c});      // f32 counter
  testing::check_rejects("batch_norm_train_grad", Attrs{}, {{2, 3, 5}, x, c, c, c},
                         {x, c, c});                                          // dy shape
  testing::check_rejects("batch_norm_train_grad", Attrs{}, {x, x, c, c, {2}},
                         {x, c, c});                                          // saved_invstd
  testing::check_rejects("batch_norm_train_grad", Attrs{}, {x, x, c, c, c}, {x, c});  // arity
  testing::check_rejects("batch_norm_train_grad", Attrs{}, {x, x, c, c, c},
                         {x, c, {4}});                                        // dbias shape
}

}  // namespace
}  // namespace of::kernels

namespace of::kernels {

// Channels split between kernel threads: every output is the one-thread output, bit for bit.
TEST_CASE("batch_norm: on two kernel threads the forward, its split and its gradient give the one-thread bits", "[kernels]") {
  std::mt19937 rng(61);
  const Shape s{3, 7, 5, 6}, v{7};
  const auto x = testing::random_floats(numel(s), rng, -3, 5);
  const auto scale = testing::random_floats(7, rng, 0.5f, 2);
  const auto bias = testing::random_floats(7, rng);
  const auto dy = testing::random_floats(numel(s), rng);
  std::vector<std::vector<float>> results[2];
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    const Outputs whole = run_forward(Attrs{}, s, x, scale, bias);
    const Outputs split = run_split_forward(Attrs{}, s, x, scale, bias, true);
    std::vector<float> dx(x.size()), dscale(7), dbias(7);
    testing::run_kernel("batch_norm_train_grad", Attrs{}, testing::f32_descs({s, s, v, v, v}), testing::f32_descs({s, v, v}),
                        {dy.data(), x.data(), scale.data(), whole.mean.data(), whole.invstd.data()},
                        {dx.data(), dscale.data(), dbias.data()});
    results[threads - 1] = {whole.y, whole.mean, whole.invstd, whole.batch_var, split.y, split.mean, dx, dscale, dbias};
  }
  set_kernel_threads(1);
  for (size_t i = 0; i < results[0].size(); ++i) {
    INFO("output " << i);
    CHECK(results[0][i] == results[1][i]);
  }
}

}  // namespace of::kernels
