// SPDX-License-Identifier: Apache-2.0
// max_pool and max_pool_grad on the GPU (the CPU twins: kernels/cpu/pool.cpp, pool_grad.cpp):
// one thread per output window for the forward pass and the argmax; the gradient then gathers,
// per input element, the dy of every window that chose it, in window order (no atomics).
// average_pool: a thread per output, its gradient a thread per input (gathering); both the CPU
// twin's order of additions. global_average_pool: a block per plane; its gradient a thread per element.
#include <cmath>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

// A max that keeps a NaN from either side (the CPU twin's nan_max).
__device__ inline float nan_max(float a, float b) { return a < b || b != b ? b : a; }

__global__ void max_pool_kernel(PoolGeometry p, const float* x, float* y) {
  const int64_t total = p.planes * p.oh * p.ow;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t plane = e / (p.oh * p.ow), oy = (e / p.ow) % p.oh, ox = e % p.ow;
    const float* xp = x + plane * p.h * p.w;
    float m = -INFINITY;
    for (int64_t ki = 0; ki < p.kh; ++ki) {
      const int64_t iy = oy * p.stride_h - p.pad_t + ki * p.dil_h;
      if (iy < 0 || iy >= p.h) continue;
      for (int64_t kj = 0; kj < p.kw; ++kj) {
        const int64_t ix = ox * p.stride_w - p.pad_l + kj * p.dil_w;
        if (ix >= 0 && ix < p.w) m = nan_max(m, xp[iy * p.w + ix]);
      }
    }
    y[e] = m;
  }
}

// The first maximum in row-major tap order, a later NaN taking it; -1 for a window all in padding.
__global__ void argmax_kernel(PoolGeometry p, const float* x, int64_t* argmax) {
  const int64_t total = p.planes * p.oh * p.ow;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t plane = e / (p.oh * p.ow), oy = (e / p.ow) % p.oh, ox = e % p.ow;
    const float* xp = x + plane * p.h * p.w;
    int64_t best = -1;
    float m = 0.0f;
    for (int64_t ki = 0; ki < p.kh; ++ki) {
      const int64_t iy = oy * p.stride_h - p.pad_t + ki * p.dil_h;
      if (iy < 0 || iy >= p.h) continue;
      for (int64_t kj = 0; kj < p.kw; ++kj) {
        const int64_t ix = ox * p.stride_w - p.pad_l + kj * p.dil_w;
        if (ix < 0 || ix >= p.w) continue;
        const float v = xp[iy * p.w + ix];
        if (best < 0 || v > m || v != v) {
          m = v;
          best = iy * p.w + ix;
        }
      }
    }
    argmax[e] = best;
  }
}

// The output index along one axis whose tap k covers input i, or -1.
__device__ inline int64_t window_of(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dil, int64_t out) {
  const int64_t t = i + pad - k * dil;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < out ? o : -1;
}

__global__ void max_pool_grad_kernel(PoolGeometry p, const float* dy, const int64_t* argmax, float* dx) {
  const int64_t total = p.planes * p.h * p.w;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t plane = e / (p.h * p.w), in = e % (p.h * p.w), iy = in / p.w, ix = in % p.w;
    const int64_t base = plane * p.oh * p.ow;
    float sum = 0.0f;
    // Taps from the last to the first visit windows in increasing output order.
    for (int64_t ki = p.kh - 1; ki >= 0; --ki) {
      const int64_t oy = window_of(iy, ki, p.stride_h, p.pad_t, p.dil_h, p.oh);
      if (oy < 0) continue;
      for (int64_t kj = p.kw - 1; kj >= 0; --kj) {
        const int64_t ox = window_of(ix, kj, p.stride_w, p.pad_l, p.dil_w, p.ow);
        if (ox >= 0 && argmax[base + oy * p.ow + ox] == in) sum += dy[base + oy * p.ow + ox];
      }
    }
    dx[e] = sum;
  }
}

}  // namespace

void launch_max_pool(const PoolGeometry& p, const float* x, float* y, cudaStream_t stream) {
  const int64_t total = p.planes * p.oh * p.ow;
  if (total > 0) max_pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(p, x, y);
}

void launch_max_pool_grad(const PoolGeometry& p, const float* dy, const float* x, int64_t* argmax, float* dx,
                          cudaStream_t stream) {
  const int64_t windows = p.planes * p.oh * p.ow, total = p.planes * p.h * p.w;
  if (total <= 0) return;
  if (windows > 0) argmax_kernel<<<blocks_for(windows), kThreads, 0, stream>>>(p, x, argmax);
  max_pool_grad_kernel<<<blocks_for(total), kThreads, 0, stream>>>(p, dy, argmax, dx);
}

}  // namespace of::kernels::cuda

namespace of::kernels::cuda {

namespace {

// Output o's window along one axis (no dilation), as cpu::windows computes it: taps [lo, hi) land
// inside the input from `start`; `padded` is the window clipped to the padded input's end.
struct AxisWindow {
  int64_t lo, hi, start, padded;
};
__device__ inline AxisWindow axis_window(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin, int64_t pad_end) {
  AxisWindow w;
  w.start = o * stride - pad_begin;
  w.lo = w.start < 0 ? -w.start : 0;
  if (w.lo > kernel) w.lo = kernel;
  w.hi = in - w.start < kernel ? in - w.start : kernel;
  if (w.hi <= w.lo) w.lo = w.hi = 0;
  const int64_t end = w.start + kernel < in + pad_end ? w.start + kernel : in + pad_end;
  w.padded = end - w.start;
  return w;
}

__device__ inline int64_t window_count(const AxisWindow& r, const AxisWindow& c, bool include_pad) {
  return include_pad ? r.padded * c.padded : (r.hi - r.lo) * (c.hi - c.lo);
}

__global__ void average_pool_kernel(PoolGeometry p, bool include_pad, const float* x, float* y) {
  const int64_t total = p.planes * p.oh * p.ow;
  for (int64_t o = first_index(); o < total; o += grid_stride()) {
    const int64_t c = o % p.ow, r = (o / p.ow) % p.oh, plane = o / (p.ow * p.oh);
    const AxisWindow rw = axis_window(r, p.h, p.kh, p.stride_h, p.pad_t, p.pad_b);
    const AxisWindow cw = axis_window(c, p.w, p.kw, p.stride_w, p.pad_l, p.pad_r);
    const float* xp = x + plane * p.h * p.w;
    float sum = 0.0f;
    for (int64_t i = rw.lo; i < rw.hi; ++i)
      for (int64_t j = cw.lo; j < cw.hi; ++j) sum += xp[(rw.start + i) * p.w + cw.start + j];
    const int64_t count = window_count(rw, cw, include_pad);
    y[o] = count > 0 ? sum / float(count) : 0.0f;
  }
}

// Per input element, the shares of the windows holding it, added in window order (the CPU
// twin scatters them in that order).
__global__ void average_pool_grad_kernel(PoolGeometry p, bool include_pad, const float* dy, float* dx) {
  const int64_t total = p.planes * p.h * p.w;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t xc = e % p.w, xr = (e / p.w) % p.h, plane = e / (p.w * p.h);
    const float* dyp = dy + plane * p.oh * p.ow;
    float acc = 0.0f;
    for (int64_t r = 0; r < p.oh; ++r) {
      const AxisWindow rw = axis_window(r, p.h, p.kh, p.stride_h, p.pad_t, p.pad_b);
      if (xr < rw.start + rw.lo || xr >= rw.start + rw.hi) continue;
      for (int64_t c = 0; c < p.ow; ++c) {
        const AxisWindow cw = axis_window(c, p.w, p.kw, p.stride_w, p.pad_l, p.pad_r);
        if (xc < cw.start + cw.lo || xc >= cw.start + cw.hi) continue;
        const int64_t count = window_count(rw, cw, include_pad);
        if (count <= 0) continue;
        acc += dyp[r * p.ow + c] / float(count);
      }
    }
    dx[e] = acc;
  }
}

__global__ void global_average_pool_planes(const float* x, float* y, int64_t spatial, float inv) {
  __shared__ double shared[kRowThreads];
  const int64_t p = blockIdx.x;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < spatial; i += blockDim.x) sum += x[p * spatial + i];
  sum = block_reduce(sum, shared, SumD{});
  if (threadIdx.x == 0) y[p] = float(sum) * inv;
}

__global__ void global_average_pool_grad_kernel(const float* dy, float* dx, int64_t total, int64_t spatial, float inv) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) dx[i] = dy[i / spatial] * inv;
}

}  // namespace

void launch_average_pool(const PoolGeometry& p, bool include_pad, const float* x, float* y, cudaStream_t stream) {
  const int64_t total = p.planes * p.oh * p.ow;
  if (total > 0) average_pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(p, include_pad, x, y);
}

void launch_average_pool_grad(const PoolGeometry& p, bool include_pad, const float* dy, float* dx, cudaStream_t stream) {
  const int64_t total = p.planes * p.h * p.w;
  if (total > 0) average_pool_grad_kernel<<<blocks_for(total), kThreads, 0, stream>>>(p, include_pad, dy, dx);
}

void launch_global_average_pool(const float* x, float* y, int64_t planes, int64_t spatial, cudaStream_t stream) {
  const float inv = spatial > 0 ? 1.0f / float(spatial) : 0.0f;
  if (planes > 0) global_average_pool_planes<<<unsigned(planes), kRowThreads, 0, stream>>>(x, y, spatial, inv);
}

void launch_global_average_pool_grad(const float* dy, float* dx, int64_t planes, int64_t spatial, cudaStream_t stream) {
  const float inv = spatial > 0 ? 1.0f / float(spatial) : 0.0f;
  const int64_t total = planes * spatial;
  if (total > 0) global_average_pool_grad_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dy, dx, total, spatial, inv);
}

}  // namespace of::kernels::cuda
