// SPDX-License-Identifier: Apache-2.0
// where (cond ? a : b, all three broadcast numpy-style; cond is bool, nonzero = true) and expand
// (x copied to a broadcast shape, any element size). Both walk the output with per-operand
// strides (0 along broadcast axes), dims collapsed at prepare time as elementwise_binary.cpp does.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/cpu/vector_clones.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

constexpr size_t max_rank = 8;

// The output's iteration space for K operands: size-1 dims dropped, and a dim merged into the
// one before it wherever every operand steps through both as one.
template <size_t K>
struct Walk {
  size_t rank = 0;
  std::array<int64_t, max_rank> dims{};
  std::array<std::array<int64_t, max_rank>, K> strides{};
  int64_t total = 0;
};

// Expects every operand to broadcast to y (checked by the caller).
template <size_t K>
Walk<K> make_walk(const Shape& y, const std::array<const Shape*, K>& operands) {
  const size_t rank = y.size();
  std::array<std::array<int64_t, max_rank>, K> full{};  // per operand, per dim of y
  for (size_t k = 0; k < K; ++k) {
    const Shape& s = *operands[k];
    const size_t off = rank - s.size();
    int64_t t = 1;
    for (size_t i = s.size(); i-- > 0;) {
      full[k][i + off] = s[i] == 1 ? 0 : t;
      t *= s[i];
    }
  }
  Walk<K> w;
  w.total = numel(y);
  for (size_t i = 0; i < rank; ++i) {
    if (y[i] == 1) continue;
    if (w.rank > 0) {
      const size_t j = w.rank - 1;
      bool merge = true;
      for (size_t k = 0; k < K; ++k) merge = merge && w.strides[k][j] == full[k][i] * y[i];
      if (merge) {
        w.dims[j] *= y[i];
        for (size_t k = 0; k < K; ++k) w.strides[k][j] = full[k][i];
        continue;
      }
    }
    w.dims[w.rank] = y[i];
    for (size_t k = 0; k < K; ++k) w.strides[k][w.rank] = full[k][i];
    ++w.rank;
  }
  if (w.rank == 0) {  // a single element
    w.dims[0] = 1;
    w.rank = 1;
  }
  return w;
}

// Calls row(offsets, done, n) once per innermost row: `done` output elements precede it and
// offsets[k] is where operand k's row starts, in elements. From kParallelElements the kernel
// threads take contiguous runs of rows, each thread's odometer started at its first row: every
// row as on one thread.
template <size_t K, class Row>
void for_each_row(const Walk<K>& w, Row&& row) {
  if (w.total == 0) return;
  const size_t last = w.rank - 1;
  const int64_t n = w.dims[last], rows = w.total / n;
  const int threads = split_threads(rows, w.total);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto [begin, end] = thread_share(rows);
    std::array<int64_t, max_rank> idx = odometer_at(begin, w.dims, last);
    std::array<int64_t, K> off{};
    for (size_t i = 0; i < last; ++i)
      for (size_t k = 0; k < K; ++k) off[k] += idx[i] * w.strides[k][i];
    for (int64_t r = begin; r < end; ++r) {
      row(off, r * n, n);
      for (size_t i = last; i-- > 0;) {  // odometer over the outer dims
        for (size_t k = 0; k < K; ++k) off[k] += w.strides[k][i];
        if (++idx[i] < w.dims[i]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= w.strides[k][i] * w.dims[i];
        idx[i] = 0;
      }
    }
  }
}

// One row of where with each operand's stride along it 0 (broadcast) or 1, known at compile
// time: a select the compiler vectorizes (attention's causal mask: a [T,T] condition, a scalar
// -inf, and the scores; its gradient: a scalar 0 and the scores' gradient). Strides chosen at run
// time it did not vectorize: 275 us for the GPT's [8,4,128,128] against 80.
template <int SC, int SA, int SB>
OF_VECTOR_CLONES void where_row(const uint8_t* __restrict c, const float* __restrict a, const float* __restrict b, float* __restrict y,
                                int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = c[i * SC] ? a[i * SA] : b[i * SB];
}

using WhereRow = void (*)(const uint8_t*, const float*, const float*, float*, int64_t);

// The row function for strides (sc, sa, sb), each 0 or 1; nullptr for others.
WhereRow where_row_for(int64_t sc, int64_t sa, int64_t sb) {
  static constexpr WhereRow rows[8] = {where_row<0, 0, 0>, where_row<0, 0, 1>, where_row<0, 1, 0>, where_row<0, 1, 1>,
                                       where_row<1, 0, 0>, where_row<1, 0, 1>, where_row<1, 1, 0>, where_row<1, 1, 1>};
  auto unit = [](int64_t s) { return s == 0 || s == 1; };
  if (!unit(sc) || !unit(sa) || !unit(sb)) return nullptr;
  return rows[sc * 4 + sa * 2 + sb];
}

class WhereKernel final : public Kernel {
 public:
  WhereKernel(const KernelConfig& cfg) {
    const Shape y = where_shape(cfg);
    walk_ = make_walk<3>(y, {&cfg.inputs[0].shape, &cfg.inputs[1].shape, &cfg.inputs[2].shape});
    const size_t last = walk_.rank - 1;
    unit_row_ = where_row_for(walk_.strides[0][last], walk_.strides[1][last], walk_.strides[2][last]);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* c = static_cast<const uint8_t*>(in[0]);
    const float* a = static_cast<const float*>(in[1]);
    const float* b = static_cast<const float*>(in[2]);
    float* y = static_cast<float*>(out[0]);
    const size_t last = walk_.rank - 1;
    const int64_t sc = walk_.strides[0][last], sa = walk_.strides[1][last],
                  sb = walk_.strides[2][last];
    const WhereRow unit_row = unit_row_;
    for_each_row(walk_, [&](const std::array<int64_t, 3>& o, int64_t done, int64_t n) {
      const uint8_t* cr = c + o[0];
      const float* ar = a + o[1];
      const float* br = b + o[2];
      float* yr = y + done;
      if (unit_row) {
        unit_row(cr, ar, br, yr, n);
      } else {
        for (int64_t i = 0; i < n; ++i) yr[i] = cr[i * sc] ? ar[i * sa] : br[i * sb];
      }
    });
  }

 private:
  Walk<3> walk_;
  WhereRow unit_row_ = nullptr;  // where_row_for the last axis' strides
};

// T is an unsigned integer of the element's size: expand moves bits, whatever the dtype.
template <class T>
class Expand final : public Kernel {
 public:
  Expand(const KernelConfig& cfg) {
    const Shape& x = cfg.inputs[0].shape;
    const Shape& y = cfg.outputs[0].shape;
    if (y.size() > max_rank) fail(where_of(cfg), "expand: rank {} exceeds {}", y.size(), max_rank);
    if (!broadcasts_to(x, y))
      fail(where_of(cfg), "expand: input {} does not broadcast to output {}", shape_str(x),
           shape_str(y));
    walk_ = make_walk<1>(y, {&x});
    // x is contiguous, so its innermost collapsed stride is 1 (copy a row) or 0 (fill one value).
    OF_ASSERT(walk_.strides[0][walk_.rank - 1] <= 1, "expand: innermost stride above 1");
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const T* x = static_cast<const T*>(in[0]);
    T* y = static_cast<T*>(out[0]);
    const bool fill = walk_.strides[0][walk_.rank - 1] == 0;
    for_each_row(walk_, [&](const std::array<int64_t, 1>& o, int64_t done, int64_t n) {
      if (fill)
        std::fill(y + done, y + done + n, x[o[0]]);
      else
        std::memcpy(y + done, x + o[0], size_t(n) * sizeof(T));
    });
  }

 private:
  Walk<1> walk_;
};

}  // namespace

std::unique_ptr<Kernel> make_where(const KernelConfig& cfg) {
  return std::make_unique<WhereKernel>(cfg);
}

std::unique_ptr<Kernel> make_expand(const KernelConfig& cfg) {
  check_arity(cfg, "expand", 1, 1, 1);
  const DType t = cfg.inputs[0].dtype;
  if (cfg.outputs[0].dtype != t)
    fail(where_of(cfg), "expand: output dtype {} differs from the input's {}",
         dtype_name(cfg.outputs[0].dtype), dtype_name(t));
  switch (dtype_size(t)) {
    case 1: return std::make_unique<Expand<uint8_t>>(cfg);
    case 2: return std::make_unique<Expand<uint16_t>>(cfg);
    case 4: return std::make_unique<Expand<uint32_t>>(cfg);
    case 8: return std::make_unique<Expand<uint64_t>>(cfg);
  }
  fail(where_of(cfg), "expand: dtype {} is not supported", dtype_name(t));
}

}  // namespace of::kernels::cpu
