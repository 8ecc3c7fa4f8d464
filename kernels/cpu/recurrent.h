// SPDX-License-Identifier: Apache-2.0
// What the recurrent kernels (lstm.cpp, gru.cpp, rnn.cpp) share: the ONNX layout of their tensors, checked
// once, and the row-major sgemm they call. Layout 0 (torch's export): X [S, N, I], W [D, G*H, I],
// R [D, G*H, H], B [D, 2*G*H] (the input's biases, then the hidden state's), initial states
// [D, N, H], Y [S, D, N, H], final states [D, N, H]; G gates per direction, D = 2 when
// bidirectional. Training saves the gates after their activations [D, S, N, G*H] and one more
// state per step [D, S, N, H] (the LSTM's cell, the GRU's reset-gated product before the gate).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"

namespace of::kernels::cpu {

struct RecurrentShape {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 0;
  bool reverse = false;  // direction "reverse": the only direction runs from the last step
  bool has_bias = false;

  int64_t gh() const { return gates * hidden; }
  // The step's time index: direction 1 of a bidirectional layer runs backwards.
  int64_t time(int64_t dir, int64_t step) const { return reverse || dir == 1 ? seq - 1 - step : step; }
};

// Checks X, W, R (and the bias when attribute has_bias says it is there) for a kernel with
// `gates` gates; fails naming cfg.node. x, w, r, b: the inputs' positions.
RecurrentShape recurrent_shape(const KernelConfig& cfg, const char* kernel, int64_t gates, const TensorDesc& x,
                               const TensorDesc& w, const TensorDesc& r, const TensorDesc* b);

// The backward kernels' shared layout: inputs X, W, R, Y, gates, per-step states (the RNN saves
// neither: `saved` false), then the optional ones `present` says are there (the first dY
// [S, D, N, H], the others [D, N, H]); outputs dX, dW, dR, dB [D, 2*G*H] and `states` of
// [D, N, H] (d initial_h, d initial_c). Fails naming cfg.node.
void check_grad_layout(const KernelConfig& cfg, const char* kernel, const RecurrentShape& s,
                       const std::vector<bool>& present, int states, bool saved = true);

// The configuration rules the recurrent kernels and their CUDA twins share: counts, attributes
// and shapes checked, failing naming cfg.node. Forward: `save` when the training outputs (gates,
// per-step states) are asked for. Backward: `present` per optional input, in input order.
struct RecurrentConfig {
  RecurrentShape s;
  bool has_h0 = false, has_c0 = false, save = false;
  bool relu = false;  // the RNN's activation: relu, else tanh
  std::vector<bool> present;
};
RecurrentConfig lstm_config(const KernelConfig& cfg);
RecurrentConfig lstm_grad_config(const KernelConfig& cfg);
RecurrentConfig gru_config(const KernelConfig& cfg);
RecurrentConfig gru_grad_config(const KernelConfig& cfg);
// The RNN saves nothing for its backward (Y holds every H_t); `relu` its activation.
RecurrentConfig rnn_config(const KernelConfig& cfg);
RecurrentConfig rnn_grad_config(const KernelConfig& cfg);

// A recurrent kernel's arguments by name, from run()'s arrays in the layouts above (the CPU
// kernels and their CUDA twins read them alike); absent optional ones are null. Forward: y_c is
// the LSTM's; gates and states (the LSTM's cells, the GRU's Q) only when training saves them.
struct RecurrentArgs {
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr;
  float *y = nullptr, *y_h = nullptr, *y_c = nullptr, *gates = nullptr, *states = nullptr;
};
RecurrentArgs recurrent_args(const RecurrentConfig& c, const void* const* in, void* const* out);
// Backward: dy_c, c0 and d_c0 are the LSTM's.
struct RecurrentGradArgs {
  const float *x = nullptr, *w = nullptr, *r = nullptr, *y = nullptr, *gates = nullptr, *states = nullptr;
  const float *dy = nullptr, *dy_h = nullptr, *dy_c = nullptr, *h0 = nullptr, *c0 = nullptr;
  float *dx = nullptr, *dw = nullptr, *dr = nullptr, *db = nullptr, *d_h0 = nullptr, *d_c0 = nullptr;
};
RecurrentGradArgs recurrent_grad_args(const RecurrentConfig& c, const void* const* in, void* const* out);

// One direction's weight gradients from the pre-activation gradients of every step, dAx (the
// input side, [S*N, G*H]) and dAh (the hidden side; the same array for the LSTM): dX += dAx W
// (dX is overwritten for direction 0), dW = dAx^T X, dR = dAh^T Hprev, dB = [sum dAx, sum dAh].
void weight_grads(const RecurrentShape& s, int64_t dir, const float* dax, const float* dah, const float* x,
                  const float* hprev, const float* w, float* dx, float* dw, float* dr, float* db);

// Direction d's input projections of every step, xw [S*N, G*H] = X W_d^T + b1 (+ b2: the LSTM
// folds both biases in; null: none).
void project_inputs(const RecurrentShape& s, int64_t d, const float* x, const float* w, const float* b1, const float* b2, float* xw);
// The hidden side of one step, hr [N, G*H] = H_{t-1} R_d^T + rb (null: 0): the GRU and the RNN keep
// it apart from the input side, as torch's cells do.
void project_hidden(const RecurrentShape& s, int64_t d, const float* h, const float* r, const float* rb, float* hr);

// Y = alpha * op(A) op(B) + beta * Y, row-major, op = transpose when t_* is true.
void sgemm(bool t_a, bool t_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* y, int64_t ldy);

}  // namespace of::kernels::cpu
