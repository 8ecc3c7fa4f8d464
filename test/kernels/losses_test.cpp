// SPDX-License-Identifier: Apache-2.0
// softmax_cross_entropy and mse_loss: values against double references, gradients against
// central differences of the double loss; out-of-range labels and large logits.
#include <cmath>

#include "grad_check.h"

namespace of::kernels {
namespace {

using testing::DoubleFn;

// Mean over the counted rows of -log softmax(x)[label], with label smoothing E of (1 - E) times
// that plus E times the mean over classes of -log softmax(x) (torch's); a row whose label is
// -100 (torch's ignore_index) or outside [0,C) counts nowhere.
double xent_ref(const std::vector<double>& x, const std::vector<int64_t>& labels, int64_t c, double smoothing = 0) {
  const int64_t n = static_cast<int64_t>(labels.size());
  double total = 0;
  int64_t rows = 0;
  for (int64_t r = 0; r < n; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, x[r * c + k]);
    for (int64_t k = 0; k < c; ++k) sum += std::exp(x[r * c + k] - m);
    double uniform = 0;
    for (int64_t k = 0; k < c; ++k) uniform += (m + std::log(sum) - x[r * c + k]) / double(c);
    if (labels[r] >= 0 && labels[r] < c) total += (1 - smoothing) * (m + std::log(sum) - x[r * c + labels[r]]) + smoothing * uniform, ++rows;
  }
  return n > 0 ? total / double(rows) : 0.0;
}

struct XentOut {
  float loss;
  std::vector<float> prob;
};

Attrs smoothed(float smoothing) {
  Attrs a;
  if (smoothing > 0) a.set_float("label_smoothing", smoothing);
  return a;
}

XentOut run_xent(const std::vector<float>& x, const std::vector<int64_t>& labels, int64_t c, float smoothing = 0) {
  const int64_t n = static_cast<int64_t>(labels.size());
  XentOut o{std::nanf(""), std::vector<float>(x.size(), std::nanf(""))};
  testing::run_kernel("softmax_cross_entropy", smoothed(smoothing),
                      {{{n, c}, DType::f32}, {{n}, DType::i64}},
                      {{{}, DType::f32}, {{n, c}, DType::f32}}, {x.data(), labels.data()},
                      {&o.loss, o.prob.data()});
  return o;
}

std::vector<float> run_xent_grad(float dloss, const std::vector<float>& prob,
                                 const std::vector<int64_t>& labels, int64_t c, float smoothing = 0) {
  const int64_t n = static_cast<int64_t>(labels.size());
  std::vector<float> dx(prob.size(), std::nanf(""));
  testing::run_kernel("softmax_cross_entropy_grad", smoothed(smoothing),
                      {{{}, DType::f32}, {{n, c}, DType::f32}, {{n}, DType::i64}},
                      {{{n, c}, DType::f32}}, {&dloss, prob.data(), labels.data()}, {dx.data()});
  return dx;
}

void check_xent(const std::vector<int64_t>& labels, int64_t c, float scale, float smoothing = 0) {
  std::mt19937 rng(43);
  const int64_t n = static_cast<int64_t>(labels.size());
  const auto x = testing::random_floats(n * c, rng, -scale, scale);
  const auto xd = testing::to_double(x);
  const XentOut out = run_xent(x, labels, c, smoothing);
  testing::check_close({out.loss}, {xent_ref(xd, labels, c, smoothing)});
  std::vector<double> prob_ref(x.size());
  for (int64_t r = 0; r < n; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, xd[r * c + k]);
    for (int64_t k = 0; k < c; ++k) sum += std::exp(xd[r * c + k] - m);
    for (int64_t k = 0; k < c; ++k) prob_ref[r * c + k] = std::exp(xd[r * c + k] - m) / sum;
  }
  testing::check_close(out.prob, prob_ref);
  const float dloss = 0.7f;
  const DoubleFn f = [&](const std::vector<double>& in) {
    return std::vector<double>{xent_ref(in, labels, c, smoothing)};
  };
  testing::check_grad(run_xent_grad(dloss, out.prob, labels, c, smoothing),
                      testing::numeric_grad(f, xd, {dloss}));
}

TEST_CASE("softmax_cross_entropy: loss, prob and gradient match double references",
          "[kernels]") {
  check_xent({3, 0, 9, 4, 4, 1}, 10, 3.0f);
  check_xent({0}, 1, 1.0f);
  check_xent({1, 0}, 2, 5.0f);
}

TEST_CASE("softmax_cross_entropy: label smoothing as torch's, loss and gradient", "[kernels]") {
  check_xent({3, 0, 9, 4, 4, 1}, 10, 3.0f, 0.1f);
  check_xent({1, 0}, 2, 5.0f, 0.5f);
  check_xent({2, -1, 7, 1}, 4, 2.0f, 1.0f);  // all uniform; out-of-range rows still 0
  // A known value: two classes, equal logits: -log 0.5 whatever the smoothing.
  CHECK(std::fabs(run_xent({0.0f, 0.0f}, {1}, 2, 0.3f).loss - std::log(2.0f)) <= 1e-6f);
  const TensorDesc logits{{4, 3}, DType::f32}, labels{{4}, DType::i64}, loss{{}, DType::f32};
  testing::check_rejects_descs("softmax_cross_entropy", smoothed(1.5f), {logits, labels}, {loss, logits});
  testing::check_rejects_descs("softmax_cross_entropy_grad", smoothed(1.5f), {loss, logits, labels}, {logits});
}

TEST_CASE("softmax_cross_entropy: large logits stay finite (log-sum-exp)", "[kernels]") {
  const std::vector<float> x{1000.0f, 0.0f, -1000.0f, 500.0f, 1000.0f, 999.0f};
  const XentOut out = run_xent(x, {2, 1}, 3);
  const double want = (2000.0 + std::log1p(std::exp(-1000.0) + std::exp(-2000.0)) +
                       std::log1p(std::exp(-1.0) + std::exp(-500.0))) / 2;
  CHECK(std::isfinite(out.loss));
  CHECK(std::fabs(out.loss - want) <= 1e-4 * want);
  for (float p : out.prob) CHECK(std::isfinite(p));
}

TEST_CASE("softmax_cross_entropy: ignored labels and labels outside 0..C-1 count nowhere and get zero gradient",
          "[kernels]") {
  check_xent({2, -100, 7, 1}, 4, 2.0f);  // -100 is ignored (torch's default), 7 is out of range for C=4
  check_xent({2, -100, -100, 1, 0}, 4, 2.0f, 0.2f);
  std::mt19937 rng(47);
  const auto x = testing::random_floats(8, rng);
  const XentOut out = run_xent(x, {-100, 100}, 4);
  CHECK(std::isnan(out.loss));  // no row counts: 0 / 0, as torch's mean
  for (float g : run_xent_grad(1.0f, out.prob, {-100, 100}, 4)) CHECK(g == 0.0f);
  // Another ignore_index: its rows are left out, a -100 is then an out-of-range label.
  Attrs a;
  a.set_int("ignore_index", 2);
  const std::vector<int64_t> labels{2, 0, 1, 2};
  const auto y = testing::random_floats(12, rng);
  float loss = 0;
  std::vector<float> prob(12);
  testing::run_kernel("softmax_cross_entropy", a, {{{4, 3}, DType::f32}, {{4}, DType::i64}}, {{{}, DType::f32}, {{4, 3}, DType::f32}},
                      {y.data(), labels.data()}, {&loss, prob.data()});
  const std::vector<int64_t> same{-100, 0, 1, -100};
  CHECK(std::fabs(loss - run_xent(y, same, 3).loss) <= 1e-6f);
  std::vector<float> dx(12);
  const float dloss = 1.0f;
  testing::run_kernel("softmax_cross_entropy_grad", a, {{{}, DType::f32}, {{4, 3}, DType::f32}, {{4}, DType::i64}},
                      {{{4, 3}, DType::f32}}, {&dloss, prob.data(), labels.data()}, {dx.data()});
  CHECK(dx == run_xent_grad(1.0f, prob, same, 3));
}

// torch's F.cross_entropy(x, labels, weight=w, reduction=...): sum_r w[y_r] * nll_r, over
// sum_r w[y_r] for the mean; rows of label `ignore` count nowhere.
double weighted_xent_ref(const std::vector<double>& x, const std::vector<int64_t>& labels, int64_t c, const std::vector<float>& w,
                         bool sum, int64_t ignore) {
  double total = 0, weight = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] == ignore) continue;
    double m = -INFINITY, e = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, x[r * size_t(c) + size_t(k)]);
    for (int64_t k = 0; k < c; ++k) e += std::exp(x[r * size_t(c) + size_t(k)] - m);
    const double wr = w.empty() ? 1.0 : double(w[size_t(labels[r])]);
    total += wr * (m + std::log(e) - x[r * size_t(c) + size_t(labels[r])]);
    weight += wr;
  }
  return sum ? total : total / weight;
}

void check_weighted_xent(const std::vector<int64_t>& labels, int64_t c, const std::vector<float>& w, bool sum, int64_t ignore) {
  std::mt19937 rng(53);
  const auto n = int64_t(labels.size());
  const auto x = testing::random_floats(n * c, rng, -3.0f, 3.0f);
  Attrs a;
  if (sum) a.set_int("sum", 1);
  a.set_int("ignore_index", ignore);
  std::vector<TensorDesc> in{{{n, c}, DType::f32}, {{n}, DType::i64}};
  std::vector<const void*> ptrs{x.data(), labels.data()};
  if (!w.empty()) in.push_back({{c}, DType::f32}), ptrs.push_back(w.data());
  float loss = std::nanf("");
  std::vector<float> prob(x.size());
  testing::run_kernel("softmax_cross_entropy", a, in, {{{}, DType::f32}, {{n, c}, DType::f32}}, ptrs, {&loss, prob.data()});
  const auto xd = testing::to_double(x);
  testing::check_close({loss}, {weighted_xent_ref(xd, labels, c, w, sum, ignore)});
  const float dloss = 0.7f;
  std::vector<TensorDesc> gin{{{}, DType::f32}, {{n, c}, DType::f32}, {{n}, DType::i64}};
  std::vector<const void*> gptrs{&dloss, prob.data(), labels.data()};
  if (!w.empty()) gin.push_back({{c}, DType::f32}), gptrs.push_back(w.data());
  std::vector<float> dx(x.size(), std::nanf(""));
  testing::run_kernel("softmax_cross_entropy_grad", a, gin, {{{n, c}, DType::f32}}, gptrs, {dx.data()});
  const DoubleFn f = [&](const std::vector<double>& v) { return std::vector<double>{weighted_xent_ref(v, labels, c, w, sum, ignore)}; };
  testing::check_grad(dx, testing::numeric_grad(f, xd, {dloss}));
}

TEST_CASE("softmax_cross_entropy: class weights and sums, loss and gradient as torch's weight= and reduction=", "[kernels]") {
  const std::vector<float> w{0.5f, 2.0f, 1.0f, 0.25f};
  check_weighted_xent({3, 0, 1, 2, 1, 1}, 4, w, false, -100);  // weighted mean
  check_weighted_xent({3, 0, 1, 2, 1, 1}, 4, w, true, -100);   // weighted sum
  check_weighted_xent({3, 0, 1, 2, 1, 1}, 4, {}, true, 1);     // sum without the rows of class 1
  check_weighted_xent({3, 0, 1, 2, 1, 1}, 4, w, false, 1);     // a weighted mean of the rest
  // Without weights, weights of 1 give the same bits.
  std::mt19937 rng(59);
  const auto x = testing::random_floats(12, rng);
  const std::vector<int64_t> labels{2, 0, 1, 2};
  const std::vector<float> ones(3, 1.0f);
  float loss = 0;
  std::vector<float> prob(12);
  testing::run_kernel("softmax_cross_entropy", Attrs{}, {{{4, 3}, DType::f32}, {{4}, DType::i64}, {{3}, DType::f32}},
                      {{{}, DType::f32}, {{4, 3}, DType::f32}}, {x.data(), labels.data(), ones.data()}, {&loss, prob.data()});
  CHECK(loss == run_xent(x, labels, 3).loss);
  // A device holding half a split batch: its sum as it is (the parts' sums add up to the batch's).
  Attrs half_sum;
  half_sum.set_int("sum", 1);
  half_sum.set_float("scale", 0.5f);
  float half = 0;
  testing::run_kernel("softmax_cross_entropy", half_sum, {{{4, 3}, DType::f32}, {{4}, DType::i64}}, {{{}, DType::f32}, {{4, 3}, DType::f32}},
                      {x.data(), labels.data()}, {&half, prob.data()});
  CHECK(std::fabs(half - 4 * run_xent(x, labels, 3).loss) <= 1e-6 * std::fabs(half));
  // Weights that are not [C], or weights with label smoothing (torch's formula for both is not
  // the kernel's), are refused.
  const TensorDesc logits{{4, 3}, DType::f32}, ids{{4}, DType::i64}, scalar{{}, DType::f32};
  testing::check_rejects_descs("softmax_cross_entropy", Attrs{}, {logits, ids, {{4}, DType::f32}}, {scalar, logits});
  testing::check_rejects_descs("softmax_cross_entropy", smoothed(0.1f), {logits, ids, {{3}, DType::f32}}, {scalar, logits});
  testing::check_rejects_descs("softmax_cross_entropy_grad", Attrs{}, {scalar, logits, ids, {{3}, DType::i64}}, {logits});
  Attrs bad;
  bad.set_int("sum", 2);
  testing::check_rejects_descs("softmax_cross_entropy", bad, {logits, ids}, {scalar, logits});
}

TEST_CASE("mse_loss: value and gradient match double references", "[kernels]") {
  std::mt19937 rng(53);
  const Shape s{4, 3, 5};
  const auto p = testing::random_floats(numel(s), rng), t = testing::random_floats(numel(s), rng);
  const auto td = testing::to_double(t);
  const DoubleFn f = [&](const std::vector<double>& in) {
    double sum = 0;
    for (size_t i = 0; i < in.size(); ++i) sum += (in[i] - td[i]) * (in[i] - td[i]);
    return std::vector<double>{sum / double(in.size())};
  };
  testing::check_close(testing::run_f32("mse_loss", Attrs{}, {s, s}, {p, t}, {}),
                       f(testing::to_double(p)));
  const float dloss = -1.3f;
  testing::check_grad(
      testing::run_f32("mse_loss_grad", Attrs{}, {{}, s, s}, {{dloss}, p, t}, s),
      testing::numeric_grad(f, testing::to_double(p), {dloss}));
}

TEST_CASE("classify_metrics: arg-max as torch.argmax: the first of ties and NaN above all", "[kernels]") {
  const float nan = std::nanf("");
  // Row 0: a tie between classes 1 and 2 (first wins); row 1: NaN at class 2 beats 5 at class 0;
  // row 2: NaN first; row 3: plain maximum at class 0.
  const std::vector<float> x = {0, 3, 3, 5, 0, nan, nan, 1, 9, 4, 2, 1};
  const std::vector<int64_t> labels = {1, 0, 0, 0};
  std::vector<float> nll(4, -1), correct(4, -1), counted(4, -1);
  testing::run_kernel("classify_metrics", Attrs{}, {{{4, 3}, DType::f32}, {{4}, DType::i64}},
                      {{{4}, DType::f32}, {{4}, DType::f32}, {{4}, DType::f32}}, {x.data(), labels.data()},
                      {nll.data(), correct.data(), counted.data()});
  CHECK(correct == std::vector<float>{1, 0, 1, 1});  // row 2: arg-max 0 is the NaN, which is label 0
  CHECK(counted == std::vector<float>{1, 1, 1, 1});
  CHECK(std::isnan(nll[1]));
  CHECK(std::abs(nll[3] - (std::log(std::exp(0.0f) + std::exp(-2.0f) + std::exp(-3.0f)))) < 1e-5f);
}

TEST_CASE("classify_metrics: an ignored label counts nowhere", "[kernels]") {
  const std::vector<float> x = {0, 3, 1, 5, 0, 1};
  const std::vector<int64_t> labels = {1, 255};
  std::vector<float> nll(2, -1), correct(2, -1), counted(2, -1);
  Attrs a;
  a.set_int("ignore_index", 255);
  testing::run_kernel("classify_metrics", a, {{{2, 3}, DType::f32}, {{2}, DType::i64}},
                      {{{2}, DType::f32}, {{2}, DType::f32}, {{2}, DType::f32}}, {x.data(), labels.data()},
                      {nll.data(), correct.data(), counted.data()});
  CHECK(correct == std::vector<float>{1, 0});
  CHECK(counted == std::vector<float>{1, 0});
  CHECK(nll[1] == 0.0f);
}

TEST_CASE("losses: bad configs throw of::Error", "[kernels]") {
  const TensorDesc logits{{4, 3}, DType::f32}, labels{{4}, DType::i64}, loss{{}, DType::f32};
  using testing::check_rejects_descs;
  check_rejects_descs("softmax_cross_entropy", Attrs{}, {logits, {{4}, DType::f32}},
                      {loss, logits});  // f32 labels
  check_rejects_descs("softmax_cross_entropy", Attrs{}, {logits, {{5}, DType::i64}},
                      {loss, logits});  // labels length
  check_rejects_descs("softmax_cross_entropy", Attrs{}, {{{4, 3, 1}, DType::f32}, labels},
                      {loss, {{4, 3, 1}, DType::f32}});  // rank
  check_rejects_descs("softmax_cross_entropy", Attrs{}, {logits, labels},
                      {{{1}, DType::f32}, logits});  // loss shape
  check_rejects_descs("softmax_cross_entropy", Attrs{}, {logits, labels}, {loss});  // arity
  check_rejects_descs("softmax_cross_entropy_grad", Attrs{}, {{{2}, DType::f32}, logits, labels},
                      {logits});  // dloss shape
  check_rejects_descs("softmax_cross_entropy_grad", Attrs{}, {loss, logits, labels},
                      {{{3, 4}, DType::f32}});  // dlogits shape
  testing::check_rejects("mse_loss", Attrs{}, {{3, 4}, {4, 3}}, {{}});
  testing::check_rejects("mse_loss", Attrs{}, {{3, 4}, {3, 4}}, {{3, 4}});
  testing::check_rejects("mse_loss_grad", Attrs{}, {{3, 4}, {3, 4}, {3, 4}}, {{3, 4}});
  testing::check_rejects("mse_loss_grad", Attrs{}, {{}, {3, 4}, {3, 5}}, {{3, 4}});
}

}  // namespace
}  // namespace of::kernels
