// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/recurrent.h"

#include <cblas.h>

#include <algorithm>

#include "common/error.h"
#include "kernels/cpu/check.h"

namespace of::kernels::cpu {

RecurrentShape recurrent_shape(const KernelConfig& cfg, const char* kernel, int64_t gates, const TensorDesc& x,
                               const TensorDesc& w, const TensorDesc& r, const TensorDesc* b) {
  RecurrentShape s;
  s.gates = gates;
  s.reverse = cfg.attrs.get_int("reverse", 0) != 0;
  if (x.shape.size() != 3) fail(where_of(cfg), "{}: X has shape {}, expected [seq, batch, input]", kernel, shape_str(x.shape));
  if (w.shape.size() != 3 || r.shape.size() != 3)
    fail(where_of(cfg), "{}: W {} and R {} must have rank 3", kernel, shape_str(w.shape), shape_str(r.shape));
  s.seq = x.shape[0];
  s.batch = x.shape[1];
  s.input = x.shape[2];
  s.dirs = w.shape[0];
  if (s.dirs != 1 && s.dirs != 2) fail(where_of(cfg), "{}: W {} has {} directions, expected 1 or 2", kernel, shape_str(w.shape), s.dirs);
  if (s.reverse && s.dirs != 1) fail(where_of(cfg), "{}: a reverse layer has one direction, W has {}", kernel, s.dirs);
  if (w.shape[1] % gates != 0 || w.shape[1] == 0)
    fail(where_of(cfg), "{}: W {} does not hold {} gates", kernel, shape_str(w.shape), gates);
  s.hidden = w.shape[1] / gates;
  if (w.shape != Shape{s.dirs, s.gh(), s.input})
    fail(where_of(cfg), "{}: W has shape {}, expected {} for X {}", kernel, shape_str(w.shape),
         shape_str({s.dirs, s.gh(), s.input}), shape_str(x.shape));
  if (r.shape != Shape{s.dirs, s.gh(), s.hidden})
    fail(where_of(cfg), "{}: R has shape {}, expected {}", kernel, shape_str(r.shape), shape_str({s.dirs, s.gh(), s.hidden}));
  s.has_bias = b != nullptr;
  if (b && b->shape != Shape{s.dirs, 2 * s.gh()})
    fail(where_of(cfg), "{}: B has shape {}, expected {}", kernel, shape_str(b->shape), shape_str({s.dirs, 2 * s.gh()}));
  return s;
}

void check_grad_layout(const KernelConfig& cfg, const char* kernel, const RecurrentShape& s,
                       const std::vector<bool>& present, int states, bool saved) {
  const Shape state{s.dirs, s.batch, s.hidden}, ys{s.seq, s.dirs, s.batch, s.hidden};
  check_input_shape(cfg, kernel, 3, "Y", ys);
  if (saved) {
    check_input_shape(cfg, kernel, 4, "gates", {s.dirs, s.seq, s.batch, s.gh()});
    check_input_shape(cfg, kernel, 5, "per-step states", {s.dirs, s.seq, s.batch, s.hidden});
  }
  int k = saved ? 6 : 4;
  for (size_t p = 0; p < present.size(); ++p)
    if (present[p]) check_input_shape(cfg, kernel, k++, "gradient or initial state", p == 0 ? ys : state);
  for (int o = 0; o < 3; ++o) check_output_shape(cfg, kernel, o, cfg.inputs[size_t(o)].shape);
  check_output_shape(cfg, kernel, 3, {s.dirs, 2 * s.gh()});
  for (int o = 4; o < 4 + states; ++o) check_output_shape(cfg, kernel, o, state);
}

RecurrentConfig lstm_config(const KernelConfig& cfg) {
  RecurrentConfig c;
  check_dtypes(cfg, "lstm", DType::f32);
  c.has_h0 = cfg.attrs.get_int("has_h0", 0) != 0;
  c.has_c0 = cfg.attrs.get_int("has_c0", 0) != 0;
  const bool has_bias = cfg.attrs.get_int("has_bias", 0) != 0;
  const int n_in = 3 + int(has_bias) + int(c.has_h0) + int(c.has_c0);
  if (cfg.inputs.size() != size_t(n_in) || (cfg.outputs.size() != 3 && cfg.outputs.size() != 5))
    fail(where_of(cfg), "lstm: has {} inputs and {} outputs, expected {} (has_bias, has_h0, has_c0) and 3 or 5",
         cfg.inputs.size(), cfg.outputs.size(), n_in);
  c.s = recurrent_shape(cfg, "lstm", 4, cfg.inputs[0], cfg.inputs[1], cfg.inputs[2], has_bias ? &cfg.inputs[3] : nullptr);
  const RecurrentShape& s = c.s;
  const Shape state{s.dirs, s.batch, s.hidden};
  for (int k = 3 + int(has_bias); k < n_in; ++k) check_input_shape(cfg, "lstm", k, "initial state", state);
  check_output_shape(cfg, "lstm", 0, {s.seq, s.dirs, s.batch, s.hidden});
  check_output_shape(cfg, "lstm", 1, state);
  check_output_shape(cfg, "lstm", 2, state);
  c.save = cfg.outputs.size() == 5;
  if (c.save) {
    check_output_shape(cfg, "lstm", 3, {s.dirs, s.seq, s.batch, s.gh()});
    check_output_shape(cfg, "lstm", 4, {s.dirs, s.seq, s.batch, s.hidden});
  }
  return c;
}

RecurrentConfig lstm_grad_config(const KernelConfig& cfg) {
  RecurrentConfig c;
  check_dtypes(cfg, "lstm_grad", DType::f32);
  for (const char* f : {"has_dy", "has_dyh", "has_dyc", "has_h0", "has_c0"}) c.present.push_back(cfg.attrs.get_int(f, 0) != 0);
  const int n_in = 6 + int(std::count(c.present.begin(), c.present.end(), true));
  if (cfg.inputs.size() != size_t(n_in) || cfg.outputs.size() != 6)
    fail(where_of(cfg), "lstm_grad: has {} inputs and {} outputs, expected {} and 6", cfg.inputs.size(), cfg.outputs.size(), n_in);
  c.s = recurrent_shape(cfg, "lstm_grad", 4, cfg.inputs[0], cfg.inputs[1], cfg.inputs[2], nullptr);
  check_grad_layout(cfg, "lstm_grad", c.s, c.present, 2);
  return c;
}

RecurrentConfig gru_config(const KernelConfig& cfg) {
  RecurrentConfig c;
  check_dtypes(cfg, "gru", DType::f32);
  c.has_h0 = cfg.attrs.get_int("has_h0", 0) != 0;
  const bool has_bias = cfg.attrs.get_int("has_bias", 0) != 0;
  const int n_in = 3 + int(has_bias) + int(c.has_h0);
  if (cfg.inputs.size() != size_t(n_in) || (cfg.outputs.size() != 2 && cfg.outputs.size() != 4))
    fail(where_of(cfg), "gru: has {} inputs and {} outputs, expected {} (has_bias, has_h0) and 2 or 4",
         cfg.inputs.size(), cfg.outputs.size(), n_in);
  c.s = recurrent_shape(cfg, "gru", 3, cfg.inputs[0], cfg.inputs[1], cfg.inputs[2], has_bias ? &cfg.inputs[3] : nullptr);
  const RecurrentShape& s = c.s;
  const Shape state{s.dirs, s.batch, s.hidden};
  if (c.has_h0) check_input_shape(cfg, "gru", n_in - 1, "initial_h", state);
  check_output_shape(cfg, "gru", 0, {s.seq, s.dirs, s.batch, s.hidden});
  check_output_shape(cfg, "gru", 1, state);
  c.save = cfg.outputs.size() == 4;
  if (c.save) {
    check_output_shape(cfg, "gru", 2, {s.dirs, s.seq, s.batch, s.gh()});
    check_output_shape(cfg, "gru", 3, {s.dirs, s.seq, s.batch, s.hidden});
  }
  return c;
}

RecurrentConfig gru_grad_config(const KernelConfig& cfg) {
  RecurrentConfig c;
  check_dtypes(cfg, "gru_grad", DType::f32);
  for (const char* f : {"has_dy", "has_dyh", "has_h0"}) c.present.push_back(cfg.attrs.get_int(f, 0) != 0);
  const int n_in = 6 + int(std::count(c.present.begin(), c.present.end(), true));
  if (cfg.inputs.size() != size_t(n_in) || cfg.outputs.size() != 5)
    fail(where_of(cfg), "gru_grad: has {} inputs and {} outputs, expected {} and 5", cfg.inputs.size(), cfg.outputs.size(), n_in);
  c.s = recurrent_shape(cfg, "gru_grad", 3, cfg.inputs[0], cfg.inputs[1], cfg.inputs[2], nullptr);
  check_grad_layout(cfg, "gru_grad", c.s, c.present, 1);
  return c;
}

RecurrentConfig rnn_config(const KernelConfig& cfg) {
  RecurrentConfig c;
  check_dtypes(cfg, "rnn", DType::f32);
  c.has_h0 = cfg.attrs.get_int("has_h0", 0) != 0;
  c.relu = cfg.attrs.get_int("relu", 0) != 0;
  const bool has_bias = cfg.attrs.get_int("has_bias", 0) != 0;
  const int n_in = 3 + int(has_bias) + int(c.has_h0);
  if (cfg.inputs.size() != size_t(n_in) || cfg.outputs.size() != 2)
    fail(where_of(cfg), "rnn: has {} inputs and {} outputs, expected {} (has_bias, has_h0) and 2", cfg.inputs.size(),
         cfg.outputs.size(), n_in);
  c.s = recurrent_shape(cfg, "rnn", 1, cfg.inputs[0], cfg.inputs[1], cfg.inputs[2], has_bias ? &cfg.inputs[3] : nullptr);
  const RecurrentShape& s = c.s;
  const Shape state{s.dirs, s.batch, s.hidden};
  if (c.has_h0) check_input_shape(cfg, "rnn", n_in - 1, "initial_h", state);
  check_output_shape(cfg, "rnn", 0, {s.seq, s.dirs, s.batch, s.hidden});
  check_output_shape(cfg, "rnn", 1, state);
  return c;
}

RecurrentConfig rnn_grad_config(const KernelConfig& cfg) {
  RecurrentConfig c;
  check_dtypes(cfg, "rnn_grad", DType::f32);
  c.relu = cfg.attrs.get_int("relu", 0) != 0;
  for (const char* f : {"has_dy", "has_dyh", "has_h0"}) c.present.push_back(cfg.attrs.get_int(f, 0) != 0);
  const int n_in = 4 + int(std::count(c.present.begin(), c.present.end(), true));
  if (cfg.inputs.size() != size_t(n_in) || cfg.outputs.size() != 5)
    fail(where_of(cfg), "rnn_grad: has {} inputs and {} outputs, expected {} and 5", cfg.inputs.size(), cfg.outputs.size(), n_in);
  c.s = recurrent_shape(cfg, "rnn_grad", 1, cfg.inputs[0], cfg.inputs[1], cfg.inputs[2], nullptr);
  check_grad_layout(cfg, "rnn_grad", c.s, c.present, 1, false);
  return c;
}

namespace {

const float* input(const void* const* in, int k) { return static_cast<const float*>(in[k]); }
float* output(void* const* out, int k) { return static_cast<float*>(out[k]); }

}  // namespace

RecurrentArgs recurrent_args(const RecurrentConfig& c, const void* const* in, void* const* out) {
  const bool lstm = c.s.gates == 4;
  RecurrentArgs a{.x = input(in, 0), .w = input(in, 1), .r = input(in, 2)};
  int k = 3;
  if (c.s.has_bias) a.b = input(in, k++);
  if (c.has_h0) a.h0 = input(in, k++);
  if (c.has_c0) a.c0 = input(in, k++);
  int o = 0;
  a.y = output(out, o++);
  a.y_h = output(out, o++);
  if (lstm) a.y_c = output(out, o++);
  if (c.save) a.gates = output(out, o++), a.states = output(out, o++);
  return a;
}

RecurrentGradArgs recurrent_grad_args(const RecurrentConfig& c, const void* const* in, void* const* out) {
  const bool lstm = c.s.gates == 4, saved = c.s.gates != 1;  // the RNN saves nothing
  RecurrentGradArgs a{.x = input(in, 0), .w = input(in, 1), .r = input(in, 2), .y = input(in, 3)};
  if (saved) a.gates = input(in, 4), a.states = input(in, 5);
  // The optional inputs in order: dY, dY_h, (dY_c), initial_h, (initial_c).
  const float** slots[] = {&a.dy, &a.dy_h, &a.dy_c, &a.h0, &a.c0};
  const float** gru_slots[] = {&a.dy, &a.dy_h, &a.h0};
  int k = saved ? 6 : 4;
  for (size_t p = 0; p < c.present.size(); ++p)
    if (c.present[p]) *(lstm ? slots[p] : gru_slots[p]) = input(in, k++);
  a.dx = output(out, 0), a.dw = output(out, 1), a.dr = output(out, 2), a.db = output(out, 3), a.d_h0 = output(out, 4);
  if (lstm) a.d_c0 = output(out, 5);
  return a;
}

void weight_grads(const RecurrentShape& s, int64_t d, const float* dax, const float* dah, const float* x,
                  const float* hprev, const float* w, float* dx, float* dw, float* dr, float* db) {
  const int64_t rows = s.seq * s.batch, GH = s.gh(), I = s.input, H = s.hidden;
  sgemm(false, false, rows, I, GH, dax, GH, w + d * GH * I, I, d == 0 ? 0.0f : 1.0f, dx, I);
  sgemm(true, false, GH, I, rows, dax, GH, x, I, 0.0f, dw + d * GH * I, I);
  sgemm(true, false, GH, H, rows, dah, GH, hprev, H, 0.0f, dr + d * GH * H, H);
  float* dbd = db + d * 2 * GH;
  std::fill(dbd, dbd + 2 * GH, 0.0f);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t j = 0; j < GH; ++j) {
      dbd[j] += dax[row * GH + j];
      dbd[GH + j] += dah[row * GH + j];
    }
}

void project_inputs(const RecurrentShape& s, int64_t d, const float* x, const float* w, const float* b1, const float* b2, float* xw) {
  const int64_t rows = s.seq * s.batch, GH = s.gh();
  sgemm(false, true, rows, GH, s.input, x, s.input, w + d * GH * s.input, s.input, 0.0f, xw, GH);
  if (b1)
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t j = 0; j < GH; ++j) xw[row * GH + j] += b2 ? b1[j] + b2[j] : b1[j];
}

void project_hidden(const RecurrentShape& s, int64_t d, const float* h, const float* r, const float* rb, float* hr) {
  const int64_t N = s.batch, H = s.hidden, GH = s.gh();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < GH; ++j) hr[n * GH + j] = rb ? rb[j] : 0.0f;
  sgemm(false, true, N, GH, H, h, H, r + d * GH * H, H, 1.0f, hr, GH);
}

void sgemm(bool t_a, bool t_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* y, int64_t ldy) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, t_a ? CblasTrans : CblasNoTrans, t_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              1.0f, a, int(lda), b, int(ldb), beta, y, int(ldy));
}

}  // namespace of::kernels::cpu
