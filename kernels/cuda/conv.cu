// SPDX-License-Identifier: Apache-2.0
// The convolution blocks' own kernels (the products are cuBLAS's, in conv.cpp): im2col, col2im as
// a gather, and the bias fill. The CPU twins' geometry (kernels/cpu/conv_geometry.h) sets them up.
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void im2col_kernel(ConvBlock b, const float* x, float* col) {
  const int64_t spatial = b.od * b.oh * b.ow, taps = b.kd * b.kh * b.kw, total = b.channels * taps * spatial;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t r = e / spatial, s = e % spatial;
    const int64_t c = r / taps, kz = (r / (b.kh * b.kw)) % b.kd, ki = (r / b.kw) % b.kh, kj = r % b.kw;
    const int64_t iz = (s / (b.oh * b.ow)) * b.stride_d - b.pad_f + kz * b.dil_d;
    const int64_t iy = ((s / b.ow) % b.oh) * b.stride_h - b.pad_t + ki * b.dil_h;
    const int64_t ix = (s % b.ow) * b.stride_w - b.pad_l + kj * b.dil_w;
    const bool inside = iz >= 0 && iz < b.d && iy >= 0 && iy < b.h && ix >= 0 && ix < b.w;
    col[e] = inside ? x[((c * b.d + iz) * b.h + iy) * b.w + ix] : 0.0f;
  }
}

// The output index o along one axis whose tap k reads input i (o*stride - pad + k*dil == i), or -1.
__device__ inline int64_t reader(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dil, int64_t out) {
  const int64_t t = i + pad - k * dil;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < out ? o : -1;
}

__global__ void col2im_kernel(ConvBlock b, const float* col, float* x) {
  const int64_t spatial = b.od * b.oh * b.ow, total = b.channels * b.d * b.h * b.w;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t c = e / (b.d * b.h * b.w), iz = (e / (b.h * b.w)) % b.d, iy = (e / b.w) % b.h, ix = e % b.w;
    float sum = 0.0f;
    for (int64_t kz = 0; kz < b.kd; ++kz) {
      const int64_t oz = reader(iz, kz, b.stride_d, b.pad_f, b.dil_d, b.od);
      if (oz < 0) continue;
      for (int64_t ki = 0; ki < b.kh; ++ki) {
        const int64_t oy = reader(iy, ki, b.stride_h, b.pad_t, b.dil_h, b.oh);
        if (oy < 0) continue;
        for (int64_t kj = 0; kj < b.kw; ++kj) {
          const int64_t ox = reader(ix, kj, b.stride_w, b.pad_l, b.dil_w, b.ow);
          if (ox >= 0) sum += col[(((c * b.kd + kz) * b.kh + ki) * b.kw + kj) * spatial + (oz * b.oh + oy) * b.ow + ox];
        }
      }
    }
    x[e] = sum;
  }
}

__global__ void fill_rows_kernel(const float* values, float* y, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t e = first_index(); e < total; e += grid_stride()) y[e] = values[e / cols];
}

}  // namespace

void launch_im2col(const ConvBlock& b, const float* x, float* col, cudaStream_t stream) {
  const int64_t total = b.channels * b.kd * b.kh * b.kw * b.od * b.oh * b.ow;
  if (total > 0) im2col_kernel<<<blocks_for(total), kThreads, 0, stream>>>(b, x, col);
}

void launch_col2im(const ConvBlock& b, const float* col, float* x, cudaStream_t stream) {
  const int64_t total = b.channels * b.d * b.h * b.w;
  if (total > 0) col2im_kernel<<<blocks_for(total), kThreads, 0, stream>>>(b, col, x);
}

void launch_fill_rows(const float* values, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols > 0) fill_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(values, y, rows, cols);
}

}  // namespace of::kernels::cuda
