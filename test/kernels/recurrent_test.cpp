// SPDX-License-Identifier: Apache-2.0
// lstm / gru / rnn (tanh and relu) against a double reference of ONNX's equations (forward,
// reverse, bidirectional; with and without bias and initial states), and their _grad kernels
// against double central differences of that reference for every input, with
// L = <Y, r1> + <Y_h, r2> (+ <Y_c, r3>).
#include <algorithm>
#include <cmath>
#include <string>

#include "grad_check.h"

namespace of::kernels {
namespace {

struct Case {
  int64_t seq, batch, input, hidden, dirs;
  bool reverse, bias, h0, c0;
};

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Which cell: the kernel, its gates, whether training saves gates and states (the RNN's does not).
struct Cell {
  const char* kernel;
  int64_t gates;
  bool saves, relu;
  bool lstm() const { return gates == 4; }
};
constexpr Cell kLstm{"lstm", 4, true, false}, kGru{"gru", 3, true, false};
constexpr Cell kRnnTanh{"rnn", 1, false, false}, kRnnRelu{"rnn", 1, false, true};

// The inputs, flattened in one vector for numeric_grad: X, W, R, [B], [h0], [c0].
struct Layout {
  std::vector<Shape> shapes;
  std::vector<size_t> offset;
  size_t total = 0;
  Layout(const Case& c, int64_t gates, bool lstm) {
    const int64_t gh = gates * c.hidden;
    shapes = {{c.seq, c.batch, c.input}, {c.dirs, gh, c.input}, {c.dirs, gh, c.hidden}};
    if (c.bias) shapes.push_back({c.dirs, 2 * gh});
    if (c.h0) shapes.push_back({c.dirs, c.batch, c.hidden});
    if (lstm && c.c0) shapes.push_back({c.dirs, c.batch, c.hidden});
    for (const Shape& s : shapes) {
      offset.push_back(total);
      total += size_t(numel(s));
    }
  }
};

// Y, Y_h (, Y_c) concatenated. lstm: gates i, o, f, c; gru: z, r, h with linear_before_reset;
// rnn: tanh or relu of one.
std::vector<double> reference(const Case& c, const Cell& cell_kind, const std::vector<double>& v) {
  const bool lstm = cell_kind.lstm();
  const int64_t G = cell_kind.gates, H = c.hidden, GH = G * H, S = c.seq, N = c.batch, I = c.input, D = c.dirs;
  const Layout L(c, G, lstm);
  size_t k = 3;
  const double* x = v.data() + L.offset[0];
  const double* w = v.data() + L.offset[1];
  const double* r = v.data() + L.offset[2];
  const double* b = c.bias ? v.data() + L.offset[k++] : nullptr;
  const double* h0 = c.h0 ? v.data() + L.offset[k++] : nullptr;
  const double* c0 = lstm && c.c0 ? v.data() + L.offset[k++] : nullptr;
  std::vector<double> y(size_t(S * D * N * H)), yh(size_t(D * N * H)), yc(size_t(D * N * H));
  for (int64_t d = 0; d < D; ++d) {
    std::vector<double> h(size_t(N * H), 0.0), cell(size_t(N * H), 0.0);
    for (int64_t e = 0; e < N * H; ++e) {
      if (h0) h[size_t(e)] = h0[d * N * H + e];
      if (c0) cell[size_t(e)] = c0[d * N * H + e];
    }
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = c.reverse || d == 1 ? S - 1 - step : step;
      std::vector<double> next(size_t(N * H));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < H; ++j) {
          double xa[4] = {}, ha[4] = {};  // X W^T + Wb and H R^T + Rb per gate
          for (int64_t g = 0; g < G; ++g) {
            const int64_t row = g * H + j;
            double sx = b ? b[d * 2 * GH + row] : 0.0, sh = b ? b[d * 2 * GH + GH + row] : 0.0;
            for (int64_t i = 0; i < I; ++i) sx += x[(t * N + n) * I + i] * w[(d * GH + row) * I + i];
            for (int64_t i = 0; i < H; ++i) sh += h[size_t(n * H + i)] * r[(d * GH + row) * H + i];
            xa[g] = sx, ha[g] = sh;
          }
          const size_t e = size_t(n * H + j);
          if (lstm) {
            const double ig = sig(xa[0] + ha[0]), og = sig(xa[1] + ha[1]), fg = sig(xa[2] + ha[2]), cg = std::tanh(xa[3] + ha[3]);
            cell[e] = fg * cell[e] + ig * cg;
            next[e] = og * std::tanh(cell[e]);
          } else if (G == 3) {
            const double z = sig(xa[0] + ha[0]), rr = sig(xa[1] + ha[1]), nn = std::tanh(xa[2] + rr * ha[2]);
            next[e] = (1 - z) * nn + z * h[e];
          } else {
            next[e] = cell_kind.relu ? std::max(0.0, xa[0] + ha[0]) : std::tanh(xa[0] + ha[0]);
          }
        }
      h = next;
      for (int64_t e = 0; e < N * H; ++e) y[size_t((t * D + d) * N * H + e)] = h[size_t(e)];
    }
    for (int64_t e = 0; e < N * H; ++e) yh[size_t(d * N * H + e)] = h[size_t(e)], yc[size_t(d * N * H + e)] = cell[size_t(e)];
  }
  y.insert(y.end(), yh.begin(), yh.end());
  if (lstm) y.insert(y.end(), yc.begin(), yc.end());
  return y;
}

Attrs forward_attrs(const Case& c, const Cell& k) {
  Attrs a;
  a.set_int("has_bias", c.bias);
  a.set_int("has_h0", c.h0);
  if (k.lstm()) a.set_int("has_c0", c.c0);
  if (k.gates == 1) a.set_int("relu", k.relu);
  a.set_int("reverse", c.reverse);
  return a;
}

void check_case(const Case& c, const Cell& kind) {
  const bool lstm = kind.lstm();
  const int64_t G = kind.gates, GH = G * c.hidden;
  const Layout L(c, G, lstm);
  std::mt19937 rng(11);
  const std::vector<float> vf = testing::random_floats(int64_t(L.total), rng);
  const std::vector<double> v = testing::to_double(vf);
  INFO(kind.kernel << (kind.relu ? " relu" : "") << " seq " << c.seq << " batch " << c.batch << " dirs " << c.dirs << " reverse " << c.reverse
                               << " bias " << c.bias << " h0 " << c.h0 << " c0 " << c.c0);
  const Shape ys{c.seq, c.dirs, c.batch, c.hidden}, state{c.dirs, c.batch, c.hidden};
  const Shape gates{c.dirs, c.seq, c.batch, GH}, per_step{c.dirs, c.seq, c.batch, c.hidden};
  // Forward, saving what the backward reads.
  std::vector<TensorDesc> in_d, out_d = {{ys, DType::f32}, {state, DType::f32}};
  if (lstm) out_d.push_back({state, DType::f32});
  if (kind.saves) {
    out_d.push_back({gates, DType::f32});
    out_d.push_back({per_step, DType::f32});
  }
  std::vector<const void*> in_p;
  for (size_t i = 0; i < L.shapes.size(); ++i) {
    in_d.push_back({L.shapes[i], DType::f32});
    in_p.push_back(vf.data() + L.offset[i]);
  }
  std::vector<std::vector<float>> outs;
  std::vector<void*> out_p;
  for (const TensorDesc& d : out_d) outs.emplace_back(size_t(numel(d.shape)), std::nanf(""));
  for (auto& o : outs) out_p.push_back(o.data());
  testing::run_kernel(kind.kernel, forward_attrs(c, kind), in_d, out_d, in_p, out_p);
  const size_t n_model = lstm ? 3 : 2;
  std::vector<float> got;
  for (size_t o = 0; o < n_model; ++o) got.insert(got.end(), outs[o].begin(), outs[o].end());
  testing::check_close(got, reference(c, kind, v));

  // Backward: every input's gradient against central differences.
  const std::vector<float> rf = testing::random_floats(int64_t(got.size()), rng);
  const std::vector<double> rd = testing::to_double(rf);
  const std::vector<double> want = testing::numeric_grad([&](const std::vector<double>& at) { return reference(c, kind, at); }, v, rd);
  Attrs ga;
  ga.set_int("reverse", c.reverse);
  if (kind.gates == 1) ga.set_int("relu", kind.relu);
  std::vector<TensorDesc> gin = {in_d[0], in_d[1], in_d[2], out_d[0]};
  std::vector<const void*> gp = {in_p[0], in_p[1], in_p[2], outs[0].data()};
  if (kind.saves) {
    gin.insert(gin.end(), {out_d[n_model], out_d[n_model + 1]});
    gp.insert(gp.end(), {outs[n_model].data(), outs[n_model + 1].data()});
  }
  const char* flags[] = {"has_dy", "has_dyh", "has_dyc"};
  size_t at = 0;
  for (size_t o = 0; o < n_model; ++o) {
    ga.set_int(flags[o], 1);
    gin.push_back(out_d[o]);
    gp.push_back(rf.data() + at);
    at += size_t(numel(out_d[o].shape));
  }
  size_t k = 3 + size_t(c.bias);
  ga.set_int("has_h0", c.h0);
  if (c.h0) gin.push_back(in_d[k]), gp.push_back(in_p[k]), ++k;
  if (lstm) {
    ga.set_int("has_c0", c.c0);
    if (c.c0) gin.push_back(in_d[k]), gp.push_back(in_p[k]);
  }
  std::vector<TensorDesc> gout = {in_d[0], in_d[1], in_d[2], {{c.dirs, 2 * GH}, DType::f32}, {state, DType::f32}};
  if (lstm) gout.push_back({state, DType::f32});
  std::vector<std::vector<float>> grads;
  std::vector<void*> grad_p;
  for (const TensorDesc& d : gout) grads.emplace_back(size_t(numel(d.shape)), std::nanf(""));
  for (auto& g : grads) grad_p.push_back(g.data());
  testing::run_kernel(std::string(kind.kernel) + "_grad", ga, gin, gout, gp, grad_p);
  // The gradients of the inputs this case has: X, W, R, then B, h0, c0 at their grad slots.
  std::vector<size_t> slot = {0, 1, 2};
  if (c.bias) slot.push_back(3);
  if (c.h0) slot.push_back(4);
  if (lstm && c.c0) slot.push_back(5);
  for (size_t i = 0; i < L.shapes.size(); ++i) {
    INFO("gradient of input " << i);
    const auto from = want.begin() + std::ptrdiff_t(L.offset[i]);
    testing::check_grad(grads[slot[i]], std::vector<double>(from, from + numel(L.shapes[i])));
  }
}

const std::vector<Case> kCases = {
    {3, 2, 4, 3, 1, false, true, false, false},  // torch's layer: biases, zero initial states
    {4, 1, 3, 2, 1, true, false, true, true},    // direction reverse, no bias, initial states
    {3, 2, 2, 3, 2, false, true, true, true},    // bidirectional
    {1, 3, 2, 2, 1, false, true, true, false},   // one step; h0 without c0
};

TEST_CASE("lstm: forward and backward through time match a double reference", "[kernels]") {
  for (const Case& c : kCases) check_case(c, kLstm);
}

TEST_CASE("gru: forward and backward through time match a double reference", "[kernels]") {
  for (const Case& c : kCases) check_case(c, kGru);
}

TEST_CASE("rnn: tanh and relu, forward and backward through time match a double reference", "[kernels]") {
  for (const Case& c : kCases) {
    check_case(c, kRnnTanh);
    check_case(c, kRnnRelu);
  }
}

TEST_CASE("lstm, gru and rnn: bad configs throw of::Error", "[kernels]") {
  const Case c{3, 2, 4, 3, 1, false, true, false, false};
  Attrs a = forward_attrs(c, kLstm);
  const TensorDesc x{{3, 2, 4}, DType::f32}, w{{1, 12, 4}, DType::f32}, r{{1, 12, 3}, DType::f32}, b{{1, 24}, DType::f32};
  const TensorDesc y{{3, 1, 2, 3}, DType::f32}, st{{1, 2, 3}, DType::f32};
  REQUIRE_NOTHROW(make_kernel("lstm", DeviceKind::cpu, DType::f32, KernelConfig{a, {x, w, r, b}, {y, st, st}, "n"}));
  Attrs no_bias = a;
  no_bias.set_int("has_bias", 0);
  testing::check_rejects_descs("lstm", no_bias, {x, w, r, b}, {y, st, st});                // one input too many
  testing::check_rejects_descs("lstm", a, {x, {{1, 12, 5}, DType::f32}, r, b}, {y, st, st});  // W's input size
  testing::check_rejects_descs("lstm", a, {x, w, r, {{1, 12}, DType::f32}}, {y, st, st});     // half a bias
  // As a GRU, W's 12 rows are 3 gates of hidden size 4, which R [1, 12, 3] does not match.
  testing::check_rejects_descs("gru", forward_attrs(c, kGru), {x, w, r, b}, {y, st});
  // An RNN's W [1, 3, 4] is one gate of 3; it writes Y and Y_h only, and nothing to save.
  const TensorDesc w1{{1, 3, 4}, DType::f32}, r1{{1, 3, 3}, DType::f32}, b1{{1, 6}, DType::f32};
  REQUIRE_NOTHROW(make_kernel("rnn", DeviceKind::cpu, DType::f32, KernelConfig{forward_attrs(c, kRnnTanh), {x, w1, r1, b1}, {y, st}, "n"}));
  testing::check_rejects_descs("rnn", forward_attrs(c, kRnnTanh), {x, w1, r1, b1}, {y, st, st});  // a third output
  testing::check_rejects_descs("rnn", forward_attrs(c, kRnnTanh), {x, w, r, b}, {y, st});         // 12 rows: R does not fit
  testing::check_rejects_descs("lstm", a, {x, w, r, b}, {y, st});                          // Y_c missing
}

}  // namespace
}  // namespace of::kernels
