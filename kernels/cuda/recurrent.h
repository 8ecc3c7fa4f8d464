// SPDX-License-Identifier: Apache-2.0
// What the CUDA recurrent kernels (cuda/lstm.cpp, cuda/gru.cpp) share: row-major products on
// the stream's cuBLAS handle and the weight gradients of one direction, as the CPU twins' helpers
// in kernels/cpu/recurrent.h (layouts and config rules are those, shared).
#pragma once

#include <cstdint>

#include "kernels/cpu/recurrent.h"
#include "kernels/cuda/device_stream.h"

namespace of::kernels::cuda {

// Y = op(A) op(B) + beta * Y, row-major, op = transpose when t_* is true; a failure is recorded
// on the stream.
void sgemm(DeviceStream& s, bool t_a, bool t_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* y, int64_t ldy);

// cpu::project_inputs and cpu::project_hidden on the GPU.
void project_inputs(DeviceStream& s, const cpu::RecurrentShape& shape, int64_t d, const float* x, const float* w, const float* b1,
                    const float* b2, float* xw);
void project_hidden(DeviceStream& s, const cpu::RecurrentShape& shape, int64_t d, const float* h, const float* r, const float* rb,
                    float* hr);

// cpu::weight_grads on the GPU: dX (+)= dAx W, dW = dAx^T X, dR = dAh^T Hprev, dB = column sums.
void weight_grads(DeviceStream& s, const cpu::RecurrentShape& shape, int64_t dir, const float* dax, const float* dah, const float* x,
                  const float* hprev, const float* w, float* dx, float* dw, float* dr, float* db);

// Device-to-device copy of `count` floats on the stream (a failure recorded there).
void copy_floats(DeviceStream& s, float* to, const float* from, int64_t count);

// Fails naming cfg.node when a recurrent layer's sizes exceed cuBLAS's 32-bit ones.
void check_blas_sizes(const KernelConfig& cfg, const cpu::RecurrentShape& shape);

}  // namespace of::kernels::cuda
