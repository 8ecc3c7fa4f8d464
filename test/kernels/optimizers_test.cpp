// SPDX-License-Identifier: Apache-2.0
// sgd_update, adam_update, rmsprop_update and adagrad_update: three consecutive steps (with a
// changing lr) against double re-implementations of torch.optim.SGD / Adam / AdamW / RMSprop /
// Adagrad's algorithms (torch 1.13's _single_tensor_* functions), run both into fresh buffers and
// in place (out == in), which must agree.
#include <algorithm>
#include <cmath>

#include "grad_check.h"

namespace of::kernels {
namespace {

constexpr int64_t kN = 37;
const float kLr[3] = {0.1f, 0.05f, 0.02f};

struct SgdCfg {
  float momentum, dampening, weight_decay;
  bool nesterov;
};

Attrs sgd_attrs(const SgdCfg& c) {
  Attrs a;
  a.set_float("momentum", c.momentum);
  a.set_float("dampening", c.dampening);
  a.set_float("weight_decay", c.weight_decay);
  a.set_int("nesterov", c.nesterov);
  return a;
}

// torch.optim.SGD, per its documentation (maximize=False).
void sgd_ref(const SgdCfg& c, std::vector<double>& p, const std::vector<double>& grad,
             std::vector<double>& buf, double lr, int step) {
  for (size_t i = 0; i < p.size(); ++i) {
    double g = grad[i];
    if (c.weight_decay != 0) g += c.weight_decay * p[i];
    if (c.momentum != 0) {
      buf[i] = step > 1 ? c.momentum * buf[i] + (1 - c.dampening) * g : g;
      g = c.nesterov ? g + c.momentum * buf[i] : buf[i];
    }
    p[i] -= lr * g;
  }
}

struct AdamCfg {
  float beta1, beta2, eps, weight_decay;
  bool decoupled;
  bool amsgrad = false;
};

Attrs adam_attrs(const AdamCfg& c) {
  Attrs a;
  a.set_float("beta1", c.beta1);
  a.set_float("beta2", c.beta2);
  a.set_float("eps", c.eps);
  a.set_float("weight_decay", c.weight_decay);
  a.set_int("decoupled", c.decoupled);
  if (c.amsgrad) a.set_int("amsgrad", 1);
  return a;
}

// torch.optim.Adam (decoupled=false) / AdamW (decoupled=true), maximize=False; amsgrad: the
// largest v so far (vmax) in the denominator.
void adam_ref(const AdamCfg& c, std::vector<double>& p, const std::vector<double>& grad,
              std::vector<double>& m, std::vector<double>& v, std::vector<double>& vmax, double lr, int t) {
  for (size_t i = 0; i < p.size(); ++i) {
    double g = grad[i];
    if (c.decoupled)
      p[i] *= 1 - lr * c.weight_decay;
    else if (c.weight_decay != 0)
      g += c.weight_decay * p[i];
    m[i] = c.beta1 * m[i] + (1 - c.beta1) * g;
    v[i] = c.beta2 * v[i] + (1 - c.beta2) * g * g;
    const double m_hat = m[i] / (1 - std::pow(double(c.beta1), t));
    vmax[i] = std::max(vmax[i], v[i]);
    const double v_hat = (c.amsgrad ? vmax[i] : v[i]) / (1 - std::pow(double(c.beta2), t));
    p[i] -= lr * m_hat / (std::sqrt(v_hat) + c.eps);
  }
}

// Runs `steps` updates of a kernel whose tensor inputs are `state` (param first, grad second,
// then the optimizer state) and scalar inputs lr, step. In place: outputs are the input buffers.
// param_last: the outputs are (state'..., param') (ZeRO 1/2's updates: the state in place, the
// new param into a buffer of its own). Returns the final state tensors other than grad (param,
// then the optimizer state).
std::vector<std::vector<float>> run_steps(const std::string& name, Attrs attrs,
                                          std::vector<std::vector<float>> state,
                                          const std::vector<std::vector<float>>& grads,
                                          bool in_place, bool param_last = false) {
  if (param_last) attrs.set_int("param_last", 1);
  const size_t n_state = state.size();  // including grad at index 1
  std::vector<Shape> in_shapes(n_state, Shape{kN});
  in_shapes.push_back({});
  in_shapes.push_back({});
  const std::vector<Shape> out_shapes(n_state - 1, Shape{kN});
  auto kernel = testing::prepare(name, attrs, in_shapes, out_shapes);
  std::vector<std::vector<float>> fresh(n_state - 1, std::vector<float>(kN, std::nanf("")));
  for (int step = 1; step <= 3; ++step) {
    state[1] = grads[step - 1];
    const float lr = kLr[step - 1], t = static_cast<float>(step);
    std::vector<const void*> in;
    for (const auto& s : state) in.push_back(s.data());
    in.push_back(&lr);
    in.push_back(&t);
    std::vector<void*> out;
    for (size_t k = 0; k < n_state - 1; ++k)
      out.push_back(in_place ? state[k == 0 ? 0 : k + 1].data() : fresh[k].data());
    if (param_last) std::rotate(out.begin(), out.begin() + 1, out.end());
    kernel->run({}, in.data(), out.data());
    if (!in_place)
      for (size_t k = 0; k < n_state - 1; ++k) state[k == 0 ? 0 : k + 1] = fresh[k];
  }
  std::vector<std::vector<float>> result{state[0]};
  for (size_t k = 2; k < n_state; ++k) result.push_back(state[k]);
  return result;
}

std::vector<std::vector<float>> random_grads(std::mt19937& rng) {
  return {testing::random_floats(kN, rng), testing::random_floats(kN, rng),
          testing::random_floats(kN, rng)};
}

void check_sgd(const SgdCfg& c) {
  std::mt19937 rng(59);
  const auto p0 = testing::random_floats(kN, rng);
  const auto v0 = testing::random_floats(kN, rng);  // step 1 must ignore it (buf = g)
  const auto grads = random_grads(rng);
  std::vector<double> p = testing::to_double(p0), v = testing::to_double(v0);
  for (int step = 1; step <= 3; ++step)
    sgd_ref(c, p, testing::to_double(grads[step - 1]), v, kLr[step - 1], step);
  INFO("momentum " << c.momentum << " dampening " << c.dampening << " wd " << c.weight_decay
                   << " nesterov " << c.nesterov);
  for (bool in_place : {false, true})
    for (bool param_last : {false, true}) {
      INFO("in place " << in_place << " param last " << param_last);
      const auto got = run_steps("sgd_update", sgd_attrs(c), {p0, {}, v0}, grads, in_place, param_last);
      testing::check_close(got[0], p);
      testing::check_close(got[1], v);
    }
}

void check_adam(const AdamCfg& c) {
  std::mt19937 rng(61);
  const auto p0 = testing::random_floats(kN, rng);
  const std::vector<float> zeros(kN, 0.0f);
  const auto grads = random_grads(rng);
  // Gradients that shrink from step to step: amsgrad's vmax then stays above v.
  std::vector<std::vector<float>> scaled = grads;
  for (size_t s = 0; s < scaled.size(); ++s)
    for (float& x : scaled[s]) x *= std::pow(0.3f, float(s));
  std::vector<double> p = testing::to_double(p0), m(kN, 0.0), v(kN, 0.0), vmax(kN, 0.0);
  for (int step = 1; step <= 3; ++step)
    adam_ref(c, p, testing::to_double(scaled[step - 1]), m, v, vmax, kLr[step - 1], step);
  INFO("beta1 " << c.beta1 << " beta2 " << c.beta2 << " wd " << c.weight_decay << " decoupled "
                << c.decoupled << " amsgrad " << c.amsgrad);
  for (bool in_place : {false, true})
    for (bool param_last : {false, true}) {
      INFO("in place " << in_place << " param last " << param_last);
      std::vector<std::vector<float>> state{p0, {}, zeros, zeros};
      if (c.amsgrad) state.push_back(zeros);
      const auto got = run_steps("adam_update", adam_attrs(c), state, scaled, in_place, param_last);
      testing::check_close(got[0], p);
      testing::check_close(got[1], m);
      testing::check_close(got[2], v);
      if (c.amsgrad) testing::check_close(got[3], vmax);
    }
}

TEST_CASE("sgd_update: plain, momentum, dampening, nesterov and weight decay match torch's rule",
          "[kernels]") {
  check_sgd({0.0f, 0.0f, 0.0f, false});
  check_sgd({0.0f, 0.0f, 0.1f, false});
  check_sgd({0.9f, 0.0f, 0.0f, false});
  check_sgd({0.9f, 0.3f, 0.01f, false});
  check_sgd({0.9f, 0.0f, 0.0f, true});
  check_sgd({0.8f, 0.0f, 0.05f, true});
}

TEST_CASE("sgd_update: without momentum there is no velocity, as torch keeps no buffer", "[kernels]") {
  for (const SgdCfg& c : {SgdCfg{0.0f, 0.0f, 0.0f, false}, SgdCfg{0.0f, 0.0f, 0.1f, false}}) {
    std::mt19937 rng(67);
    const auto p0 = testing::random_floats(kN, rng);
    const auto grads = random_grads(rng);
    std::vector<double> p = testing::to_double(p0), unused(kN, 0.0);
    for (int step = 1; step <= 3; ++step) sgd_ref(c, p, testing::to_double(grads[step - 1]), unused, kLr[step - 1], step);
    for (bool in_place : {false, true}) {
      INFO("wd " << c.weight_decay << " in place " << in_place);
      const auto got = run_steps("sgd_update", sgd_attrs(c), {p0, {}}, grads, in_place);
      REQUIRE(got.size() == 1);
      testing::check_close(got[0], p);
    }
  }
  const Shape p{kN};
  Attrs momentum;
  momentum.set_float("momentum", 0.9f);
  testing::check_rejects("sgd_update", momentum, {p, p, {}, {}}, {p});  // momentum needs its buffer
}

TEST_CASE("adam_update: Adam and AdamW with bias correction match torch's rule", "[kernels]") {
  check_adam({0.9f, 0.999f, 1e-8f, 0.0f, false});
  check_adam({0.9f, 0.999f, 1e-8f, 0.1f, false});  // Adam: L2 added to the gradient
  check_adam({0.9f, 0.999f, 1e-8f, 0.1f, true});   // AdamW: decoupled decay
  check_adam({0.5f, 0.9f, 1e-3f, 0.01f, true});
  check_adam({0.9f, 0.999f, 1e-8f, 0.0f, false, true});  // amsgrad
  check_adam({0.9f, 0.99f, 1e-8f, 0.1f, true, true});
}

struct RmspropCfg {
  float alpha, eps, weight_decay, momentum;
  bool centered;
};

// torch.optim.RMSprop: square_avg, momentum_buffer and grad_avg start at zero.
void rmsprop_ref(const RmspropCfg& c, std::vector<double>& p, const std::vector<double>& grad, std::vector<double>& sq,
                 std::vector<double>& buf, std::vector<double>& ga, double lr) {
  for (size_t i = 0; i < p.size(); ++i) {
    const double g = grad[i] + c.weight_decay * p[i];
    sq[i] = c.alpha * sq[i] + (1 - c.alpha) * g * g;
    double avg;
    if (c.centered) {
      ga[i] = c.alpha * ga[i] + (1 - c.alpha) * g;
      avg = std::sqrt(sq[i] - ga[i] * ga[i]) + c.eps;
    } else {
      avg = std::sqrt(sq[i]) + c.eps;
    }
    if (c.momentum > 0) {
      buf[i] = c.momentum * buf[i] + g / avg;
      p[i] -= lr * buf[i];
    } else {
      p[i] -= lr * g / avg;
    }
  }
}

void check_rmsprop(const RmspropCfg& c) {
  std::mt19937 rng(71);
  const auto p0 = testing::random_floats(kN, rng);
  const std::vector<float> zeros(kN, 0.0f);
  const auto grads = random_grads(rng);
  std::vector<double> p = testing::to_double(p0), sq(kN, 0.0), buf(kN, 0.0), ga(kN, 0.0);
  for (int step = 1; step <= 3; ++step) rmsprop_ref(c, p, testing::to_double(grads[step - 1]), sq, buf, ga, kLr[step - 1]);
  Attrs a;
  a.set_float("alpha", c.alpha);
  a.set_float("eps", c.eps);
  a.set_float("weight_decay", c.weight_decay);
  a.set_float("momentum", c.momentum);
  a.set_int("centered", c.centered);
  std::vector<std::vector<float>> state{p0, {}, zeros};
  std::vector<std::vector<double>> want{p, sq};
  if (c.momentum > 0) {
    state.push_back(zeros);
    want.push_back(buf);
  }
  if (c.centered) {
    state.push_back(zeros);
    want.push_back(ga);
  }
  INFO("alpha " << c.alpha << " eps " << c.eps << " wd " << c.weight_decay << " momentum " << c.momentum << " centered " << c.centered);
  for (bool in_place : {false, true})
    for (bool param_last : {false, true}) {
      INFO("in place " << in_place << " param last " << param_last);
      const auto got = run_steps("rmsprop_update", a, state, grads, in_place, param_last);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) testing::check_close(got[k], want[k], 1e-5);
    }
}

TEST_CASE("rmsprop_update: plain, momentum, centered and weight decay match torch's rule, with the states torch keeps", "[kernels]") {
  check_rmsprop({0.99f, 1e-8f, 0.0f, 0.0f, false});
  check_rmsprop({0.9f, 0.0316f, 1e-5f, 0.9f, false});  // torchvision's MobileNetV3 recipe
  check_rmsprop({0.99f, 1e-8f, 0.1f, 0.0f, true});
  check_rmsprop({0.95f, 1e-6f, 0.01f, 0.5f, true});
}

// torch.optim.Adagrad with initial_accumulator_value 0.
void adagrad_ref(double lr_decay, double eps, double wd, std::vector<double>& p, const std::vector<double>& grad, std::vector<double>& sum,
                 double lr, int step) {
  const double clr = lr / (1 + (step - 1) * lr_decay);
  for (size_t i = 0; i < p.size(); ++i) {
    const double g = grad[i] + wd * p[i];
    sum[i] += g * g;
    p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
  }
}

TEST_CASE("adagrad_update: lr decay, weight decay and eps match torch's rule", "[kernels]") {
  for (const auto& [lr_decay, eps, wd] : {std::tuple{0.0f, 1e-10f, 0.0f}, std::tuple{0.5f, 1e-6f, 0.1f}}) {
    std::mt19937 rng(73);
    const auto p0 = testing::random_floats(kN, rng);
    const std::vector<float> zeros(kN, 0.0f);
    const auto grads = random_grads(rng);
    std::vector<double> p = testing::to_double(p0), sum(kN, 0.0);
    for (int step = 1; step <= 3; ++step) adagrad_ref(lr_decay, eps, wd, p, testing::to_double(grads[step - 1]), sum, kLr[step - 1], step);
    Attrs a;
    a.set_float("lr_decay", lr_decay);
    a.set_float("eps", eps);
    a.set_float("weight_decay", wd);
    for (bool in_place : {false, true})
      for (bool param_last : {false, true}) {
        INFO("lr_decay " << lr_decay << " in place " << in_place << " param last " << param_last);
        const auto got = run_steps("adagrad_update", a, {p0, {}, zeros}, grads, in_place, param_last);
        testing::check_close(got[0], p, 1e-5);
        testing::check_close(got[1], sum, 1e-5);
      }
  }
}

TEST_CASE("optimizers: bad configs throw of::Error", "[kernels]") {
  const Shape p{kN};
  Attrs nesterov;
  nesterov.set_int("nesterov", 1);  // without momentum: torch raises too
  testing::check_rejects("sgd_update", nesterov, {p, p, p, {}, {}}, {p, p});
  nesterov.set_float("momentum", 0.9f);
  nesterov.set_float("dampening", 0.1f);
  testing::check_rejects("sgd_update", nesterov, {p, p, p, {}, {}}, {p, p});
  Attrs none;
  testing::check_rejects("sgd_update", none, {p, {kN + 1}, p, {}, {}}, {p, p});  // grad shape
  testing::check_rejects("sgd_update", none, {p, p, p, {2}, {}}, {p, p});        // lr shape
  testing::check_rejects("sgd_update", none, {p, p, p, {}}, {p, p});             // no step
  testing::check_rejects("sgd_update", none, {p, p, p, {}, {}}, {p});            // outputs
  Attrs negative;
  negative.set_float("momentum", -0.1f);
  testing::check_rejects("sgd_update", negative, {p, p, p, {}, {}}, {p, p});
  Attrs beta;
  beta.set_float("beta1", 1.0f);
  testing::check_rejects("adam_update", beta, {p, p, p, p, {}, {}}, {p, p, p});
  Attrs decoupled;
  decoupled.set_int("decoupled", 2);
  testing::check_rejects("adam_update", decoupled, {p, p, p, p, {}, {}}, {p, p, p});
  Attrs amsgrad;
  amsgrad.set_int("amsgrad", 1);
  testing::check_rejects("adam_update", amsgrad, {p, p, p, p, {}, {}}, {p, p, p});  // amsgrad needs its vmax
  testing::check_rejects("adam_update", none, {p, p, p, {3}, {}, {}}, {p, p, p});  // v shape
  testing::check_rejects("adam_update", none, {p, p, p, p, {}, {}}, {p, p, {3}});   // out shape
  Attrs last;
  last.set_int("param_last", 2);
  testing::check_rejects("adam_update", last, {p, p, p, p, {}, {}}, {p, p, p});
  testing::check_rejects("sgd_update", none, {p, p, p, {}, {}}, {p, p, p});  // no copy output any more
  Attrs with_momentum;
  with_momentum.set_float("momentum", 0.9f);
  testing::check_rejects("rmsprop_update", with_momentum, {p, p, p, {}, {}}, {p, p});  // momentum needs its buffer
  Attrs alpha;
  alpha.set_float("alpha", 1.5f);
  testing::check_rejects("rmsprop_update", alpha, {p, p, p, {}, {}}, {p, p});
  testing::check_rejects("adagrad_update", none, {p, p, {}, {}}, {p});  // no sum
}

}  // namespace
}  // namespace of::kernels
