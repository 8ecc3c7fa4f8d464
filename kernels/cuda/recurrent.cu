// SPDX-License-Identifier: Apache-2.0
// The recurrent kernels' element-wise steps (launch.h): the cell math is kernels/recurrent_cells.h,
// shared with the CPU twins; the products around them are cuBLAS's (cuda/recurrent.cpp).
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/recurrent_cells.h"

namespace of::kernels::cuda {

namespace {

__global__ void add_bias_rows_kernel(float* y, const float* b1, const float* b2, int64_t rows, int64_t cols) {
  for (int64_t i = first_index(); i < rows * cols; i += grid_stride()) {
    const int64_t j = i % cols;
    y[i] += b2 ? b1[j] + b2[j] : b1[j];
  }
}

__global__ void fill_rows_kernel(float* y, const float* row, int64_t rows, int64_t cols) {
  for (int64_t i = first_index(); i < rows * cols; i += grid_stride()) y[i] = row ? row[i % cols] : 0.0f;
}

__global__ void lstm_step_kernel(const float* a, float* c, float* ht, float* gates, float* cells, int64_t n, int64_t h) {
  const int64_t gh = 4 * h;
  for (int64_t e = first_index(); e < n * h; e += grid_stride()) {
    const int64_t row = e / h, j = e % h;
    float cell = c[e];
    ht[e] = recurrent::lstm_cell(a + row * gh, h, j, cell, gates ? gates + row * gh : nullptr);
    c[e] = cell;
    if (cells) cells[e] = cell;
  }
}

__global__ void lstm_step_grad_kernel(const float* gates, const float* ct, const float* cprev, const float* dy, const float* dh_carry,
                                      float* dc, float* da, int64_t n, int64_t h) {
  const int64_t gh = 4 * h;
  for (int64_t e = first_index(); e < n * h; e += grid_stride()) {
    const int64_t row = e / h, j = e % h;
    const float dh = dh_carry[e] + (dy ? dy[e] : 0.0f);
    float dcell = dc[e];
    recurrent::lstm_cell_grad(gates + row * gh, h, j, dh, ct[e], cprev[e], dcell, da + row * gh);
    dc[e] = dcell;
  }
}

__global__ void gru_step_kernel(const float* x, const float* hr, const float* hprev, float* ht, float* gates, float* q, int64_t n,
                                int64_t h) {
  const int64_t gh = 3 * h;
  for (int64_t e = first_index(); e < n * h; e += grid_stride()) {
    const int64_t row = e / h, j = e % h;
    ht[e] = recurrent::gru_cell(x + row * gh, hr + row * gh, h, j, hprev[e], gates ? gates + row * gh : nullptr, q ? q + e : nullptr);
  }
}

__global__ void gru_step_grad_kernel(const float* gates, const float* q, const float* hprev, const float* dy, float* dh, float* dax,
                                     float* dah, int64_t n, int64_t h) {
  const int64_t gh = 3 * h;
  for (int64_t e = first_index(); e < n * h; e += grid_stride()) {
    const int64_t row = e / h, j = e % h;
    const float dht = dh[e] + (dy ? dy[e] : 0.0f);
    dh[e] = recurrent::gru_cell_grad(gates + row * gh, h, j, dht, hprev[e], q[e], dax + row * gh, dah + row * gh);
  }
}

__global__ void rnn_step_kernel(const float* x, const float* hr, float* ht, int64_t count, bool relu) {
  for (int64_t e = first_index(); e < count; e += grid_stride()) ht[e] = recurrent::rnn_cell(x[e] + hr[e], relu);
}

__global__ void rnn_step_grad_kernel(const float* ht, const float* dy, const float* dh, float* da, int64_t count, bool relu) {
  for (int64_t e = first_index(); e < count; e += grid_stride())
    da[e] = recurrent::rnn_cell_grad(dh[e] + (dy ? dy[e] : 0.0f), ht[e], relu);
}

__global__ void bias_grad_kernel(const float* dax, const float* dah, float* db, int64_t rows, int64_t cols) {
  for (int64_t j = first_index(); j < 2 * cols; j += grid_stride()) {
    const float* from = j < cols ? dax : dah;
    const int64_t col = j < cols ? j : j - cols;
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += from[r * cols + col];
    db[j] = sum;
  }
}

}  // namespace

void launch_add_bias_rows(float* y, const float* b1, const float* b2, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols > 0) add_bias_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, b1, b2, rows, cols);
}

void launch_fill_rows(float* y, const float* row, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols > 0) fill_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, row, rows, cols);
}

void launch_lstm_step(const float* a, float* c, float* ht, float* gates, float* cells, int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h > 0) lstm_step_kernel<<<blocks_for(n * h), kThreads, 0, stream>>>(a, c, ht, gates, cells, n, h);
}

void launch_lstm_step_grad(const float* gates, const float* ct, const float* cprev, const float* dy, const float* dh_carry, float* dc,
                           float* da, int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h > 0) lstm_step_grad_kernel<<<blocks_for(n * h), kThreads, 0, stream>>>(gates, ct, cprev, dy, dh_carry, dc, da, n, h);
}

void launch_gru_step(const float* x, const float* hr, const float* hprev, float* ht, float* gates, float* q, int64_t n, int64_t h,
                     cudaStream_t stream) {
  if (n * h > 0) gru_step_kernel<<<blocks_for(n * h), kThreads, 0, stream>>>(x, hr, hprev, ht, gates, q, n, h);
}

void launch_gru_step_grad(const float* gates, const float* q, const float* hprev, const float* dy, float* dh, float* dax, float* dah,
                          int64_t n, int64_t h, cudaStream_t stream) {
  if (n * h > 0) gru_step_grad_kernel<<<blocks_for(n * h), kThreads, 0, stream>>>(gates, q, hprev, dy, dh, dax, dah, n, h);
}

void launch_rnn_step(const float* x, const float* hr, float* ht, int64_t n, int64_t h, bool relu, cudaStream_t stream) {
  if (n * h > 0) rnn_step_kernel<<<blocks_for(n * h), kThreads, 0, stream>>>(x, hr, ht, n * h, relu);
}

void launch_rnn_step_grad(const float* ht, const float* dy, const float* dh, float* da, int64_t n, int64_t h, bool relu,
                          cudaStream_t stream) {
  if (n * h > 0) rnn_step_grad_kernel<<<blocks_for(n * h), kThreads, 0, stream>>>(ht, dy, dh, da, n * h, relu);
}

void launch_bias_grad(const float* dax, const float* dah, float* db, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols > 0) bias_grad_kernel<<<blocks_for(2 * cols), kThreads, 0, stream>>>(dax, dah, db, rows, cols);
}

}  // namespace of::kernels::cuda
