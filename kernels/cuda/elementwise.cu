// SPDX-License-Identifier: Apache-2.0
// Element-wise CUDA kernels and their launchers: activations (GELU: kernels/cpu/pointwise.cpp) and their gradients, broadcast
// binary ops, where, fills and the accumulate steps. Grid-stride loops, 256 threads a block; the math
// is the CPU twin's (kernels/cpu/activations.cpp, activation_grads.cpp, elementwise_binary.cpp).
#include "kernels/cast_value.h"
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

template <UnaryOp Op>
__device__ inline float unary_op(float x) {
  if constexpr (Op == UnaryOp::relu) return !(x <= 0.0f) ? x : 0.0f;  // NaN stays NaN, as torch.relu
  if constexpr (Op == UnaryOp::tanh) return tanhf(x);
  if constexpr (Op == UnaryOp::gelu) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));  // exact (erf) GELU
  // exp of a non-positive argument only, as the CPU twin
  const float e = expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

template <UnaryGradOp Op>
__device__ inline float unary_grad_op(float dy, float y) {
  if constexpr (Op == UnaryGradOp::relu) return y <= 0.0f ? 0.0f : dy;
  if constexpr (Op == UnaryGradOp::sigmoid) return dy * y * (1.0f - y);
  if constexpr (Op == UnaryGradOp::gelu) {  // y is the forward input x here: Phi(x) + x phi(x)
    const float cdf = 0.5f * (1.0f + erff(y * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * expf(-0.5f * y * y);
    return dy * (cdf + y * pdf);
  }
  return dy * (1.0f - y * y);
}

template <UnaryOp Op>
__global__ void unary_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = unary_op<Op>(x[i]);
}

template <UnaryGradOp Op>
__global__ void unary_grad_kernel(const float* dy, const float* t, float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = unary_grad_op<Op>(dy[i], t[i]);
}

template <BinaryOp Op>
__device__ inline float binary_op(float a, float b) {
  if constexpr (Op == BinaryOp::add) return a + b;
  if constexpr (Op == BinaryOp::sub) return a - b;
  if constexpr (Op == BinaryOp::mul) return a * b;
  if constexpr (Op == BinaryOp::max) return a > b || a != a ? a : b;  // NaN wins, as the CPU twin
  if constexpr (Op == BinaryOp::min) return a < b || a != a ? a : b;
  if constexpr (Op == BinaryOp::prelu) return a > 0.0f ? a : b * a;
  if constexpr (Op == BinaryOp::pow) return powf(a, b);
  if constexpr (Op == BinaryOp::fmod) return fmodf(a, b);
  return a / b;
}

// Output element i's offsets in the two broadcast operands.
__device__ inline void broadcast_offsets(const BroadcastSpace& s, int64_t i, int64_t& oa, int64_t& ob) {
  int64_t rest = i;
  oa = ob = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t k = rest % s.dims[d];
    rest /= s.dims[d];
    oa += k * s.a_strides[d];
    ob += k * s.b_strides[d];
  }
}

// int64 add, sub, mul wrap on overflow (unsigned arithmetic), as the CPU twin's.
template <BinaryOp Op>
__device__ inline int64_t binary_op(int64_t a, int64_t b) {
  if constexpr (Op == BinaryOp::add) return int64_t(uint64_t(a) + uint64_t(b));
  if constexpr (Op == BinaryOp::sub) return int64_t(uint64_t(a) - uint64_t(b));
  if constexpr (Op == BinaryOp::mod || Op == BinaryOp::fmod) {  // as the CPU twin: b of 0 or -1 gives 0
    const int64_t r = b == 0 || b == -1 ? 0 : a % b;
    return Op == BinaryOp::mod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
  return int64_t(uint64_t(a) * uint64_t(b));
}

// T: float, or int64_t (add, sub, mul).
template <BinaryOp Op, class T>
__global__ void binary_kernel(BroadcastSpace s, const T* a, const T* b, T* y) {
  for (int64_t i = first_index(); i < s.total; i += grid_stride()) {
    int64_t oa, ob;
    broadcast_offsets(s, i, oa, ob);
    y[i] = binary_op<Op>(a[oa], b[ob]);
  }
}

__global__ void where_kernel(WhereSpace s, const uint8_t* cond, const float* a, const float* b, float* y) {
  for (int64_t i = first_index(); i < s.total; i += grid_stride()) {
    int64_t rest = i, oc = 0, oa = 0, ob = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t k = rest % s.dims[d];
      rest /= s.dims[d];
      oc += k * s.strides[0][d];
      oa += k * s.strides[1][d];
      ob += k * s.strides[2][d];
    }
    y[i] = cond[oc] ? a[oa] : b[ob];
  }
}

__global__ void fill_broadcast_kernel(const float* c, int64_t rs, int64_t cs, float beta, float* y, int64_t m,
                                      int64_t n) {
  const int64_t total = m * n;
  for (int64_t i = first_index(); i < total; i += grid_stride()) y[i] = beta * c[(i / n) * rs + (i % n) * cs];
}

__global__ void fill_kernel(float* y, float v, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = v;
}

__global__ void add_inplace_kernel(float* acc, const float* g, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) acc[i] += g[i];
}

__global__ void scale_inplace_kernel(float* acc, float s, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) acc[i] *= s;
}

}  // namespace

void launch_unary(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  switch (op) {
    case UnaryOp::relu: unary_kernel<UnaryOp::relu><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n); break;
    case UnaryOp::sigmoid: unary_kernel<UnaryOp::sigmoid><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n); break;
    case UnaryOp::tanh: unary_kernel<UnaryOp::tanh><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n); break;
    case UnaryOp::gelu: unary_kernel<UnaryOp::gelu><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n); break;
  }
}

void launch_unary_grad(UnaryGradOp op, const float* dy, const float* t, float* dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  switch (op) {
    case UnaryGradOp::relu:
      unary_grad_kernel<UnaryGradOp::relu><<<blocks_for(n), kThreads, 0, stream>>>(dy, t, dx, n);
      break;
    case UnaryGradOp::sigmoid:
      unary_grad_kernel<UnaryGradOp::sigmoid><<<blocks_for(n), kThreads, 0, stream>>>(dy, t, dx, n);
      break;
    case UnaryGradOp::tanh:
      unary_grad_kernel<UnaryGradOp::tanh><<<blocks_for(n), kThreads, 0, stream>>>(dy, t, dx, n);
      break;
    case UnaryGradOp::gelu:
      unary_grad_kernel<UnaryGradOp::gelu><<<blocks_for(n), kThreads, 0, stream>>>(dy, t, dx, n);
      break;
  }
}

void launch_binary(BinaryOp op, const BroadcastSpace& s, const float* a, const float* b, float* y,
                   cudaStream_t stream) {
  if (s.total <= 0) return;
  const unsigned g = blocks_for(s.total);
  switch (op) {
    case BinaryOp::add: binary_kernel<BinaryOp::add><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::sub: binary_kernel<BinaryOp::sub><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::mul: binary_kernel<BinaryOp::mul><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::div: binary_kernel<BinaryOp::div><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::max: binary_kernel<BinaryOp::max><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::min: binary_kernel<BinaryOp::min><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::prelu: binary_kernel<BinaryOp::prelu><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::pow: binary_kernel<BinaryOp::pow><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::fmod: binary_kernel<BinaryOp::fmod><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    default: break;  // mod takes int64 operands only (its factory checks)
  }
}

void launch_int_binary(BinaryOp op, const BroadcastSpace& s, const int64_t* a, const int64_t* b, int64_t* y, cudaStream_t stream) {
  if (s.total <= 0) return;
  const unsigned g = blocks_for(s.total);
  switch (op) {
    case BinaryOp::add: binary_kernel<BinaryOp::add><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::sub: binary_kernel<BinaryOp::sub><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::mod: binary_kernel<BinaryOp::mod><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    case BinaryOp::fmod: binary_kernel<BinaryOp::fmod><<<g, kThreads, 0, stream>>>(s, a, b, y); break;
    default: binary_kernel<BinaryOp::mul><<<g, kThreads, 0, stream>>>(s, a, b, y); break;  // the config allows add, sub, mul, mod, fmod
  }
}

namespace {

template <CompareOp Op, class T>
__device__ inline uint8_t compare_op(T a, T b) {
  if constexpr (Op == CompareOp::greater) return a > b;
  if constexpr (Op == CompareOp::greater_or_equal) return a >= b;
  if constexpr (Op == CompareOp::less) return a < b;
  if constexpr (Op == CompareOp::less_or_equal) return a <= b;
  if constexpr (Op == CompareOp::equal) return a == b;
  if constexpr (Op == CompareOp::logical_and) return a != 0 && b != 0;
  return a != 0 || b != 0;  // logical_or
}

template <CompareOp Op, class T>
__global__ void compare_kernel(BroadcastSpace s, const T* a, const T* b, uint8_t* y) {
  for (int64_t i = first_index(); i < s.total; i += grid_stride()) {
    int64_t oa, ob;
    broadcast_offsets(s, i, oa, ob);
    y[i] = compare_op<Op, T>(a[oa], b[ob]);
  }
}

template <class T>
void compare_as(CompareOp op, const BroadcastSpace& s, const void* a, const void* b, uint8_t* y, cudaStream_t stream) {
  const unsigned g = blocks_for(s.total);
  const T* x = static_cast<const T*>(a);
  const T* z = static_cast<const T*>(b);
  switch (op) {
    case CompareOp::greater: compare_kernel<CompareOp::greater, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
    case CompareOp::greater_or_equal: compare_kernel<CompareOp::greater_or_equal, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
    case CompareOp::less: compare_kernel<CompareOp::less, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
    case CompareOp::less_or_equal: compare_kernel<CompareOp::less_or_equal, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
    case CompareOp::equal: compare_kernel<CompareOp::equal, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
    case CompareOp::logical_and: compare_kernel<CompareOp::logical_and, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
    case CompareOp::logical_or: compare_kernel<CompareOp::logical_or, T><<<g, kThreads, 0, stream>>>(s, x, z, y); break;
  }
}

template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = cast_value<From, To>(x[i]);
}

template <class From>
void cast_from(ElemType to, const From* x, void* y, int64_t n, cudaStream_t stream) {
  const unsigned g = blocks_for(n);
  if (to == ElemType::f32) cast_kernel<From, float><<<g, kThreads, 0, stream>>>(x, static_cast<float*>(y), n);
  else if (to == ElemType::i64) cast_kernel<From, int64_t><<<g, kThreads, 0, stream>>>(x, static_cast<int64_t*>(y), n);
  else cast_kernel<From, uint8_t><<<g, kThreads, 0, stream>>>(x, static_cast<uint8_t*>(y), n);
}

__global__ void clip_int_kernel(const int64_t* x, int64_t* y, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = min(max(x[i], lo), hi);
}

__global__ void logical_not_kernel(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = x[i] == 0;
}

}  // namespace

void launch_compare(CompareOp op, ElemType in, const BroadcastSpace& s, const void* a, const void* b, uint8_t* y,
                    cudaStream_t stream) {
  if (s.total <= 0) return;
  if (in == ElemType::f32) compare_as<float>(op, s, a, b, y, stream);
  else if (in == ElemType::i64) compare_as<int64_t>(op, s, a, b, y, stream);
  else compare_as<uint8_t>(op, s, a, b, y, stream);
}

void launch_cast(ElemType from, ElemType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (from == ElemType::f32) cast_from(to, static_cast<const float*>(x), y, n, stream);
  else if (from == ElemType::i64) cast_from(to, static_cast<const int64_t*>(x), y, n, stream);
  else cast_from(to, static_cast<const uint8_t*>(x), y, n, stream);
}

void launch_clip_int(const int64_t* x, int64_t* y, int64_t n, int64_t lo, int64_t hi, cudaStream_t stream) {
  if (n > 0) clip_int_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, lo, hi);
}

void launch_logical_not(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream) {
  if (n > 0) logical_not_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
}

void launch_where(const WhereSpace& s, const uint8_t* cond, const float* a, const float* b, float* y,
                  cudaStream_t stream) {
  if (s.total > 0) where_kernel<<<blocks_for(s.total), kThreads, 0, stream>>>(s, cond, a, b, y);
}

void launch_fill_broadcast(const float* c, int64_t row_stride, int64_t col_stride, float beta, float* y, int64_t m,
                           int64_t n, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  fill_broadcast_kernel<<<blocks_for(m * n), kThreads, 0, stream>>>(c, row_stride, col_stride, beta, y, m, n);
}

void launch_fill(float* y, float value, int64_t n, cudaStream_t stream) {
  if (n > 0) fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, value, n);
}

void launch_add_inplace(float* acc, const float* g, int64_t n, cudaStream_t stream) {
  if (n > 0) add_inplace_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, g, n);
}

void launch_scale_inplace(float* acc, float scale, int64_t n, cudaStream_t stream) {
  if (n > 0) scale_inplace_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, scale, n);
}

}  // namespace of::kernels::cuda
