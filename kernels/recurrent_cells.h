// SPDX-License-Identifier: Apache-2.0
// The per-element math of the recurrent kernels, one definition for the CPU kernels
// (cpu/lstm.cpp, cpu/gru.cpp, cpu/rnn.cpp) and their CUDA twins (cuda/recurrent.cu): one LSTM, GRU or RNN cell,
// forward and backward, for element j of one batch row. Layouts as kernels/cpu/recurrent.h says:
// a row of pre-activations or saved gates holds G blocks of H (LSTM: i, o, f, c; GRU: z, r, n).
// On the host std::exp and std::tanh as before (the CPU's results are unchanged), on the device
// CUDA's float functions.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace of::kernels::recurrent {

namespace math {
#ifdef __CUDA_ARCH__
__device__ inline float exp(float x) { return expf(x); }
__device__ inline float tanh(float x) { return tanhf(x); }
#else
inline float exp(float x) { return std::exp(x); }
inline float tanh(float x) { return std::tanh(x); }
#endif
}  // namespace math

OF_HOST_DEVICE inline float sigmoid(float x) { return 1.0f / (1.0f + math::exp(-x)); }

// LSTM: `a` the row's pre-activations; `cell` C_{t-1} in, C_t out; returns H_t. `gates` (null:
// not training) receives the activations i, o, f, c.
OF_HOST_DEVICE inline float lstm_cell(const float* a, int64_t H, int64_t j, float& cell, float* gates) {
  const float i = sigmoid(a[j]), o = sigmoid(a[H + j]), f = sigmoid(a[2 * H + j]), g = math::tanh(a[3 * H + j]);
  cell = f * cell + i * g;
  if (gates) gates[j] = i, gates[H + j] = o, gates[2 * H + j] = f, gates[3 * H + j] = g;
  return o * math::tanh(cell);
}

// LSTM backward: `gates` the row's saved activations, dh = dL/dH_t, ct = C_t, cprev = C_{t-1};
// `dc` dL/dC_t in, dL/dC_{t-1} (through the forget gate) out; `da` receives the row's
// pre-activation gradients.
OF_HOST_DEVICE inline void lstm_cell_grad(const float* gates, int64_t H, int64_t j, float dh, float ct, float cprev, float& dc,
                                          float* da) {
  const float i = gates[j], o = gates[H + j], f = gates[2 * H + j], cc = gates[3 * H + j];
  const float tc = math::tanh(ct);
  const float dcell = dc + dh * o * (1.0f - tc * tc);
  da[j] = dcell * cc * i * (1.0f - i);
  da[H + j] = dh * tc * o * (1.0f - o);
  da[2 * H + j] = dcell * cprev * f * (1.0f - f);
  da[3 * H + j] = dcell * i * (1.0f - cc * cc);
  dc = dcell * f;
}

// GRU (linear_before_reset): `x` the row's input projections (with Wb), `hr` its hidden ones (with
// Rb), hprev = H_{t-1}; returns H_t. `gates` (null: not training) receives z, r, n and `q` the
// reset-gated term's input Q.
OF_HOST_DEVICE inline float gru_cell(const float* x, const float* hr, int64_t H, int64_t j, float hprev, float* gates, float* q) {
  const float z = sigmoid(x[j] + hr[j]), rr = sigmoid(x[H + j] + hr[H + j]);
  const float qq = hr[2 * H + j];
  const float nn = math::tanh(x[2 * H + j] + rr * qq);
  if (gates) gates[j] = z, gates[H + j] = rr, gates[2 * H + j] = nn, *q = qq;
  return (1.0f - z) * nn + z * hprev;
}

// GRU backward: dht = dL/dH_t, hp = H_{t-1}, q = Q; `dax` / `dah` receive the row's input-side and
// hidden-side pre-activation gradients; returns H_t's direct share of dL/dH_{t-1} (the gates'
// share is added by the caller's product with R).
OF_HOST_DEVICE inline float gru_cell_grad(const float* gates, int64_t H, int64_t j, float dht, float hp, float q, float* dax,
                                          float* dah) {
  const float z = gates[j], rr = gates[H + j], nn = gates[2 * H + j];
  const float dn = dht * (1.0f - z) * (1.0f - nn * nn);  // before tanh
  const float dz = dht * (hp - nn) * z * (1.0f - z);
  const float dr = dn * q * rr * (1.0f - rr);
  dax[j] = dz, dax[H + j] = dr, dax[2 * H + j] = dn;
  dah[j] = dz, dah[H + j] = dr, dah[2 * H + j] = dn * rr;
  return dht * z;
}

// RNN (ONNX RNN, torch's nn.RNN): H_t = f(a) of the row's pre-activation a, f tanh or, with
// `relu`, max(a, 0).
OF_HOST_DEVICE inline float rnn_cell(float a, bool relu) { return relu ? (a > 0.0f ? a : 0.0f) : math::tanh(a); }

// RNN backward: the pre-activation gradient from dht = dL/dH_t and H_t itself, as torch's
// tanh and relu backward read their output: dht (1 - H_t^2), or dht where H_t > 0.
OF_HOST_DEVICE inline float rnn_cell_grad(float dht, float ht, bool relu) {
  return relu ? (ht > 0.0f ? dht : 0.0f) : dht * (1.0f - ht * ht);
}

}  // namespace of::kernels::recurrent
