// SPDX-License-Identifier: Apache-2.0
// pointwise.cpp: each forward against a double reference, each *_grad against double central
// differences of its forward, fed (dy, x); the gradients' boundary rules at the kinks exactly.
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>

#include "grad_check.h"

namespace of::kernels {
namespace {

using Fn = std::function<double(double)>;

const Shape test_shape{3, 5, 7};

Attrs float_attrs(std::initializer_list<std::pair<const char*, float>> values) {
  Attrs a;
  for (const auto& [name, v] : values) a.set_float(name, v);
  return a;
}

// Random x in [lo, hi], nudged at least 1e-2 away from every kink (the finite differences'
// step is 1e-6, and float rounding of x must not cross a kink either).
std::vector<float> inputs(std::mt19937& rng, float lo, float hi,
                          const std::vector<double>& kinks = {}) {
  std::vector<float> x = testing::random_floats(numel(test_shape), rng, lo, hi);
  for (float& v : x)
    for (double k : kinks)
      if (std::fabs(v - k) < 1e-2) v = static_cast<float>(k + (v < k ? -2e-2 : 2e-2));
  return x;
}

void check_forward(const std::string& name, const Attrs& attrs, const Fn& f, float lo, float hi) {
  std::mt19937 rng(11);
  const std::vector<float> x = inputs(rng, lo, hi);
  std::vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = f(x[i]);
  INFO(name);
  testing::check_close(testing::run_f32(name, attrs, {test_shape}, {x}, test_shape), ref);
}

void check_backward(const std::string& name, const Attrs& attrs, const Fn& f, float lo, float hi,
                    const std::vector<double>& kinks = {}) {
  std::mt19937 rng(13);
  const std::vector<float> x = inputs(rng, lo, hi, kinks);
  const std::vector<float> r = testing::random_floats(numel(test_shape), rng);
  const testing::DoubleFn fwd = [&f](const std::vector<double>& in) {
    std::vector<double> out(in.size());
    for (size_t i = 0; i < in.size(); ++i) out[i] = f(in[i]);
    return out;
  };
  const auto ref = testing::numeric_grad(fwd, testing::to_double(x), testing::to_double(r));
  INFO(name);
  testing::check_grad(testing::run_f32(name, attrs, {test_shape, test_shape}, {r, x}, test_shape),
                      ref);
}

double clip_ref(double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }
double hard_sigmoid_ref(double x, double a, double b) { return clip_ref(a * x + b, 0, 1); }
double hard_swish_ref(double x) { return x * clip_ref(x + 3, 0, 6) / 6; }
double leaky_ref(double x, double a) { return x > 0 ? x : a * x; }

TEST_CASE("pointwise: erf sqrt reciprocal exp neg match double references", "[kernels]") {
  check_forward("erf", Attrs{}, [](double x) { return std::erf(x); }, -3, 3);
  check_forward("sqrt", Attrs{}, [](double x) { return std::sqrt(x); }, 0, 4);
  check_forward("reciprocal", Attrs{}, [](double x) { return 1 / x; }, 0.5f, 2);
  check_forward("reciprocal", Attrs{}, [](double x) { return 1 / x; }, -2, -0.5f);
  check_forward("exp", Attrs{}, [](double x) { return std::exp(x); }, -3, 3);
  check_forward("neg", Attrs{}, [](double x) { return -x; }, -3, 3);
  check_forward("gelu", Attrs{}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4);
}

TEST_CASE("pow: fast-path and general exponents match a double reference", "[kernels]") {
  for (float p : {2.0f, 3.0f, 1.0f, -1.0f}) {  // integer exponents: negative x too
    INFO("exponent " << p);
    check_forward("pow", float_attrs({{"exponent", p}}), [p](double x) { return std::pow(x, p); },
                  -2, 2);
  }
  for (float p : {0.5f, 0.0f, 2.5f, -1.5f, 0.3f}) {
    INFO("exponent " << p);
    check_forward("pow", float_attrs({{"exponent", p}}), [p](double x) { return std::pow(x, p); },
                  0.1f, 2);
  }
}

TEST_CASE("pow: exponents 2, 3 and 0.5 are exactly x*x, x*x*x and sqrtf", "[kernels]") {
  std::mt19937 rng(3);
  const auto x = testing::random_floats(64, rng, 0, 10);
  const Shape s{64};
  const auto sq = testing::run_f32("pow", float_attrs({{"exponent", 2}}), {s}, {x}, s);
  const auto cube = testing::run_f32("pow", float_attrs({{"exponent", 3}}), {s}, {x}, s);
  const auto root = testing::run_f32("pow", float_attrs({{"exponent", 0.5f}}), {s}, {x}, s);
  for (size_t i = 0; i < x.size(); ++i) {
    CHECK(sq[i] == x[i] * x[i]);
    CHECK(cube[i] == x[i] * x[i] * x[i]);
    CHECK(root[i] == std::sqrt(x[i]));
  }
}

TEST_CASE("clip leaky_relu hard_sigmoid hard_swish: match double references", "[kernels]") {
  check_forward("clip", float_attrs({{"min", -0.5f}, {"max", 0.7f}}),
                [](double x) { return clip_ref(x, -0.5, 0.7); }, -2, 2);
  check_forward("clip", float_attrs({{"max", 6}}), [](double x) { return std::min(x, 6.0); },
                -8, 8);
  check_forward("clip", Attrs{}, [](double x) { return x; }, -8, 8);  // +-inf by default
  check_forward("leaky_relu", Attrs{}, [](double x) { return leaky_ref(x, 0.01); }, -3, 3);
  check_forward("leaky_relu", float_attrs({{"alpha", 0.2f}}),
                [](double x) { return leaky_ref(x, double(0.2f)); }, -3, 3);
  check_forward("hard_sigmoid", Attrs{},
                [](double x) { return hard_sigmoid_ref(x, double(0.2f), 0.5); }, -4, 4);
  check_forward("hard_sigmoid", float_attrs({{"alpha", 1 / 6.0f}, {"beta", 0.5f}}),
                [](double x) { return hard_sigmoid_ref(x, double(1 / 6.0f), 0.5); }, -5, 5);
  check_forward("hard_swish", Attrs{}, hard_swish_ref, -5, 5);
}

TEST_CASE("hard_sigmoid with torch's attributes: clamp(x + 3) / 6 to the last bit, also near -3", "[kernels]") {
  // alpha * x + 0.5 would cancel there: 3000 ulp off at x = -2.9997.
  std::vector<float> x;
  for (float v = -3.01f; v < -2.99f; v += 1e-4f) x.push_back(v);
  x.push_back(2.9999f);
  const Shape shape{int64_t(x.size())};
  const auto attrs = float_attrs({{"alpha", 1 / 6.0f}, {"beta", 0.5f}});
  const auto y = testing::run_f32("hard_sigmoid", attrs, {shape}, {x}, shape);
  const auto dx = testing::run_f32("hard_sigmoid_grad", attrs, {shape, shape}, {std::vector<float>(x.size(), 1.0f), x}, shape);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i]);
    const float want = std::min(std::max(x[i] + 3.0f, 0.0f), 6.0f) / 6.0f;
    CHECK(y[i] == want);
    CHECK(dx[i] == (x[i] > -3.0f && x[i] < 3.0f ? 1.0f / 6.0f : 0.0f));
  }
}

TEST_CASE("clip: NaN propagates as in torch.clamp", "[kernels]") {
  const auto y = testing::run_f32("clip", float_attrs({{"min", 0}, {"max", 1}}), {{2}},
                                  {{std::nanf(""), 2}}, {2});
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == 1);
}

TEST_CASE("erf_grad pow_grad: match finite differences of their forwards", "[kernels]") {
  check_backward("erf_grad", Attrs{}, [](double x) { return std::erf(x); }, -3, 3);
  check_backward("gelu_grad", Attrs{}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4);
  for (float p : {2.0f, 3.0f, 1.0f}) {
    INFO("exponent " << p);
    check_backward("pow_grad", float_attrs({{"exponent", p}}),
                   [p](double x) { return std::pow(x, p); }, -2, 2);
  }
  for (float p : {0.5f, 2.5f, -1.5f, 0.0f}) {
    INFO("exponent " << p);
    check_backward("pow_grad", float_attrs({{"exponent", p}}),
                   [p](double x) { return std::pow(x, p); }, 0.2f, 2);
  }
}

TEST_CASE("pow_grad: exponent 0 gives zeros even at x == 0", "[kernels]") {
  const auto dx = testing::run_f32("pow_grad", float_attrs({{"exponent", 0}}), {{2}, {2}},
                                   {{1, 1}, {0, 2}}, {2});
  CHECK(dx == std::vector<float>{0, 0});
}

TEST_CASE("clip_grad leaky_relu_grad hard_sigmoid_grad hard_swish_grad: match finite differences",
          "[kernels]") {
  check_backward("clip_grad", float_attrs({{"min", -0.5f}, {"max", 0.7f}}),
                 [](double x) { return clip_ref(x, -0.5, 0.7); }, -2, 2, {-0.5, 0.7});
  check_backward("clip_grad", float_attrs({{"min", 0}, {"max", 6}}),
                 [](double x) { return clip_ref(x, 0, 6); }, -8, 8, {0, 6});
  check_backward("leaky_relu_grad", float_attrs({{"alpha", 0.1f}}),
                 [](double x) { return leaky_ref(x, double(0.1f)); }, -3, 3, {0});
  check_backward("leaky_relu_grad", Attrs{}, [](double x) { return leaky_ref(x, double(0.01f)); },
                 -3, 3, {0});
  check_backward("hard_sigmoid_grad", Attrs{},
                 [](double x) { return hard_sigmoid_ref(x, double(0.2f), 0.5); }, -4, 4,
                 {-2.5, 2.5});
  check_backward("hard_sigmoid_grad", float_attrs({{"alpha", 1 / 6.0f}, {"beta", 0.5f}}),
                 [](double x) { return hard_sigmoid_ref(x, double(1 / 6.0f), 0.5); }, -5, 5,
                 {-3, 3});
  check_backward("hard_swish_grad", Attrs{}, hard_swish_ref, -5, 5, {-3, 3});
}

TEST_CASE("pointwise grads: PyTorch's rules at the kinks", "[kernels]") {
  const Shape s{4};
  const std::vector<float> dy{1, 1, 1, 1};
  // hardtanh_backward: strict, so x == min and x == max pass nothing.
  CHECK(testing::run_f32("clip_grad", float_attrs({{"min", 0}, {"max", 6}}), {s, s},
                         {dy, {0, 6, 3, -1}}, s) == std::vector<float>{0, 0, 1, 0});
  // leaky_relu_backward: x == 0 takes alpha.
  CHECK(testing::run_f32("leaky_relu_grad", float_attrs({{"alpha", 0.25f}}), {s, s},
                         {{2, 2, 2, 2}, {0, 1, -1, 0}}, s) ==
        std::vector<float>{0.5f, 2, 0.5f, 0.5f});
  // Hardsigmoid: alpha*x + beta == 0 or 1 passes nothing.
  CHECK(testing::run_f32("hard_sigmoid_grad", float_attrs({{"alpha", 0.25f}, {"beta", 0.5f}}),
                         {s, s}, {dy, {-2, 2, 0, 3}}, s) == std::vector<float>{0, 0, 0.25f, 0});
  // hardswish_backward: x == -3 and x == 3 take (2x+3)/6.
  CHECK(testing::run_f32("hard_swish_grad", Attrs{}, {s, s}, {dy, {-3, 3, -3.5f, 3.5f}}, s) ==
        std::vector<float>{-0.5f, 1.5f, 0, 1});
}

double softplus_ref(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }
double elu_ref(double x, double alpha) { return x > 0 ? x : alpha * std::expm1(x); }

TEST_CASE("log abs sin cos softplus elu: match double references", "[kernels]") {
  check_forward("log", Attrs{}, [](double x) { return std::log(x); }, 0.05f, 8);
  check_forward("abs", Attrs{}, [](double x) { return std::fabs(x); }, -4, 4);
  check_forward("sin", Attrs{}, [](double x) { return std::sin(x); }, -7, 7);
  check_forward("cos", Attrs{}, [](double x) { return std::cos(x); }, -7, 7);
  check_forward("softplus", Attrs{}, softplus_ref, -30, 30);  // both sides of torch's threshold 20
  check_forward("elu", Attrs{}, [](double x) { return elu_ref(x, 1.0); }, -5, 5);
  check_forward("elu", float_attrs({{"alpha", 0.3f}}), [](double x) { return elu_ref(x, 0.3); }, -5, 5);
}

TEST_CASE("log_grad abs_grad sin_grad cos_grad softplus_grad elu_grad: match finite differences", "[kernels]") {
  check_backward("log_grad", Attrs{}, [](double x) { return std::log(x); }, 0.05f, 8);
  check_backward("abs_grad", Attrs{}, [](double x) { return std::fabs(x); }, -4, 4, {0});
  check_backward("sin_grad", Attrs{}, [](double x) { return std::sin(x); }, -7, 7);
  check_backward("cos_grad", Attrs{}, [](double x) { return std::cos(x); }, -7, 7);
  check_backward("softplus_grad", Attrs{}, softplus_ref, -30, 30, {20});
  check_backward("elu_grad", float_attrs({{"alpha", 0.3f}}), [](double x) { return elu_ref(x, 0.3); }, -5, 5, {0});
  // torch's rules where the derivative jumps: sgn(0) = 0; ELU at 0 takes alpha exp(0).
  const Shape s{3};
  CHECK(testing::run_f32("abs_grad", Attrs{}, {s, s}, {{2, 2, 2}, {0, -1, 1}}, s) == std::vector<float>{0, -2, 2});
  CHECK(testing::run_f32("elu_grad", float_attrs({{"alpha", 0.5f}}), {s, s}, {{2, 2, 2}, {0, 1, -40}}, s)[0] == 1.0f);
}

TEST_CASE("sign floor ceil round: torch's values at ties, zeros of either sign and NaN", "[kernels]") {
  // torch 1.13: sign(nan) = 0, round halves to even (-0.5 -> -0), floor/ceil keep -0.
  const float nan = std::nanf("");
  const std::vector<float> x = {nan, -0.0f, 0.0f, -2.5f, 2.5f, 0.5f, 1.5f, -0.5f, 3.7f, -3.7f, 1e20f};
  const Shape s{int64_t(x.size())};
  const auto bits = [](const std::vector<float>& v) {
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
  };
  CHECK(bits(testing::run_f32("sign", Attrs{}, {s}, {x}, s)) == bits({0, 0, 0, -1, 1, 1, 1, -1, 1, -1, 1}));
  CHECK(bits(testing::run_f32("round", Attrs{}, {s}, {x}, s)) == bits({nan, -0.0f, 0, -2, 2, 0, 2, -0.0f, 4, -4, 1e20f}));
  CHECK(bits(testing::run_f32("floor", Attrs{}, {s}, {x}, s)) == bits({nan, -0.0f, 0, -3, 2, 0, 1, -1, 3, -4, 1e20f}));
  CHECK(bits(testing::run_f32("ceil", Attrs{}, {s}, {x}, s)) == bits({nan, -0.0f, 0, -2, 3, 1, 2, -0.0f, 4, -3, 1e20f}));
}

TEST_CASE("pointwise: bad configs throw of::Error", "[kernels]") {
  for (const char* name : {"erf", "sqrt", "reciprocal", "exp", "neg", "clip", "leaky_relu", "hard_sigmoid", "hard_swish", "gelu",
                           "log", "abs", "sin", "cos", "softplus", "elu", "sign", "floor", "ceil", "round"}) {
    INFO(name);
    testing::check_rejects(name, Attrs{}, {{3, 4}}, {{4, 3}});          // output shape
    testing::check_rejects(name, Attrs{}, {{3, 4}, {3, 4}}, {{3, 4}});  // arity
  }
  for (const char* name : {"erf_grad", "clip_grad", "leaky_relu_grad", "hard_sigmoid_grad",
                           "hard_swish_grad", "gelu_grad", "log_grad", "abs_grad", "sin_grad", "cos_grad",
                           "softplus_grad", "elu_grad"}) {
    INFO(name);
    testing::check_rejects(name, Attrs{}, {{3, 4}, {4, 3}}, {{3, 4}});  // x shape
    testing::check_rejects(name, Attrs{}, {{3, 4}, {3, 4}}, {{12}});    // output shape
    testing::check_rejects(name, Attrs{}, {{3, 4}}, {{3, 4}});          // arity
  }
  testing::check_rejects("pow", Attrs{}, {{3}}, {{3}});       // exponent is required
  testing::check_rejects("pow_grad", Attrs{}, {{3}, {3}}, {{3}});
  testing::check_rejects("pow", float_attrs({{"exponent", 2}}), {{3}}, {{4}});
  testing::check_rejects("pow", float_attrs({{"exponent", std::nanf("")}}), {{3}}, {{3}});
  testing::check_rejects("clip", float_attrs({{"min", std::nanf("")}}), {{3}}, {{3}});
  testing::check_rejects_descs("exp", Attrs{}, {{{3}, DType::i64}}, {{{3}, DType::f32}});
}

}  // namespace
}  // namespace of::kernels
