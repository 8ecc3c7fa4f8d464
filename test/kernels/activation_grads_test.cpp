// SPDX-License-Identifier: Apache-2.0
// relu_grad, sigmoid_grad, tanh_grad against double central differences of the forward op,
// fed the forward OUTPUT y as the kernels expect.
#include <cmath>

#include "grad_check.h"

namespace of::kernels {
namespace {

using testing::DoubleFn;

void check_activation_grad(const std::string& name, double (*f)(double)) {
  std::mt19937 rng(5);
  const Shape s{3, 5, 7};
  std::vector<float> x = testing::random_floats(numel(s), rng, -3.0f, 3.0f);
  for (float& v : x)  // keep relu's kink out of the finite differences' reach
    if (std::fabs(v) < 1e-3f) v = 0.5f;
  const std::vector<float> r = testing::random_floats(numel(s), rng);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(f(x[i]));
  const DoubleFn fwd = [f](const std::vector<double>& in) {
    std::vector<double> out(in.size());
    for (size_t i = 0; i < in.size(); ++i) out[i] = f(in[i]);
    return out;
  };
  const auto ref = testing::numeric_grad(fwd, testing::to_double(x), testing::to_double(r));
  INFO(name);
  testing::check_grad(testing::run_f32(name, Attrs{}, {s, s}, {r, y}, s), ref);
}

double relu(double x) { return x > 0 ? x : 0; }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double tanh_d(double x) { return std::tanh(x); }

TEST_CASE("relu_grad: matches finite differences of relu", "[kernels]") {
  check_activation_grad("relu_grad", relu);
}

TEST_CASE("sigmoid_grad: matches finite differences of sigmoid", "[kernels]") {
  check_activation_grad("sigmoid_grad", sigmoid);
}

TEST_CASE("tanh_grad: matches finite differences of tanh", "[kernels]") {
  check_activation_grad("tanh_grad", tanh_d);
}

TEST_CASE("relu_grad: y == 0 (the output of a fused relu) blocks the gradient", "[kernels]") {
  const Shape s{4};
  const auto dx =
      testing::run_f32("relu_grad", Attrs{}, {s, s}, {{1, 2, 3, 4}, {0, 0.5f, 0, 2}}, s);
  CHECK(dx == std::vector<float>{0, 2, 0, 4});
}

TEST_CASE("activation grads: bad configs throw of::Error", "[kernels]") {
  for (const char* name : {"relu_grad", "sigmoid_grad", "tanh_grad"}) {
    testing::check_rejects(name, Attrs{}, {{3, 4}, {4, 3}}, {{3, 4}});  // y shape
    testing::check_rejects(name, Attrs{}, {{3, 4}, {3, 4}}, {{12}});    // output shape
    testing::check_rejects(name, Attrs{}, {{3, 4}}, {{3, 4}});          // arity
  }
}

}  // namespace
}  // namespace of::kernels
