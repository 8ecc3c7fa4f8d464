// SPDX-License-Identifier: Apache-2.0
// Gradients of the pooling kernels (2-D, NCHW, same attributes and window geometry as pool.cpp):
// max_pool_grad routes each dy to the first maximum of its window (row-major taps, as PyTorch),
// average_pool_grad spreads dy / count over the window, global_average_pool_grad broadcasts
// dy / (H*W). dx is zeroed and then accumulated into, so it must not alias an input.
#include <algorithm>
#include <tuple>
#include <cmath>

#include <omp.h>

#include "kernels/cpu/check.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"
#include "kernels/cpu/pool_window.h"
#include "kernels/cpu/vector_clones.h"

namespace of::kernels::cpu {

namespace {

class PoolGrad : public Kernel {
 protected:
  // Inputs: dy (pooled shape), then x (dX's shape) for max_pool_grad only.
  PoolGrad(const KernelConfig& cfg, const char* name, int n_in, bool dilations) {
    check_arity(cfg, name, n_in, n_in, 1);
    check_dtypes(cfg, name, DType::f32);
    const Shape& x = cfg.outputs[0].shape;
    if (n_in == 2) check_input_shape(cfg, name, 1, "x", x);
    const auto [r, c] = pool_axes(cfg, name, x, cfg.inputs[0].shape, "input 0 (dy)", dilations);
    rows_ = r;
    cols_ = c;
    planes_ = x[0] * x[1];
    row_windows_ = windows(rows_);
    col_windows_ = windows(cols_);
  }
  Axis rows_, cols_;
  int64_t planes_ = 0;
  std::vector<Window> row_windows_, col_windows_;
};

// (dy, x) -> dx; x is the forward input, needed to find each window's argmax again.
// Separably, per output row: each input column's maximum over the window's rows with the first
// row holding it (contiguous, vectorizable), then per window the best of its columns, a higher
// value or an equal one in an earlier row winning (an equal one in the same row keeps the
// earlier column): the first maximum in row-major order, as a tap-by-tap scan finds it. A band
// holding a NaN is scanned tap by tap instead (PyTorch sends the gradient to the last NaN).
// vmax[j], vrow[j] = src[j], row where src[j] > vmax[j]; returns how many src[j] are NaN.
// Locals, not re-reads, so GCC sees plain selects.
OF_VECTOR_CLONES int column_max(const float* __restrict src, int32_t row, float* __restrict vmax, int32_t* __restrict vrow, int64_t w) {
  int nans = 0;
  for (int64_t j = 0; j < w; ++j) {
    const float s = src[j], v = vmax[j];
    const bool take = s > v;
    nans += s != s;
    vmax[j] = take ? s : v;
    vrow[j] = take ? row : vrow[j];
  }
  return nans;
}

// The windows of one output row that have all `taps` column taps inside the input (n of them, the
// first starting at input column `first`, `stride` apart, taps `dw` apart): per window the first
// tap in row-major order holding its maximum, from the per-column maxima vmax and their rows
// vrow (a higher value, or an equal one in an earlier row, wins; an equal one in the same row
// keeps the earlier column). Tap by tap across all the windows, so that GCC vectorizes it: one
// window at a time, random data mispredicted a branch at every tap (resnet18's 3x3 stride-2
// max pool's gradient: 20 ms against 8 ms on all-equal data).
OF_VECTOR_CLONES void best_columns(const float* __restrict vmax, const int32_t* __restrict vrow, int64_t first, int64_t stride,
                                   int64_t dw, int64_t taps, int64_t n, float* __restrict m, int32_t* __restrict row,
                                   int32_t* __restrict col) {
  for (int64_t o = 0; o < n; ++o) {
    const int64_t c = first + o * stride;
    m[o] = vmax[c];
    row[o] = vrow[c];
    col[o] = int32_t(c);
  }
  for (int64_t j = 1; j < taps; ++j) {
    const int64_t at = first + j * dw;
    for (int64_t o = 0; o < n; ++o) {
      const int64_t c = at + o * stride;
      const float v = vmax[c], best = m[o];
      const int32_t vr = vrow[c], br = row[o];
      const bool take = (v > best) | ((v == best) & (vr < br));
      m[o] = take ? v : best;
      row[o] = take ? vr : br;
      col[o] = take ? int32_t(c) : col[o];
    }
  }
}

// The common CNN case (2x2 windows, stride 2, no padding or dilation, floor mode): the windows
// of input rows r0 and r1 tile them, so each dx element is written once, without zeroing first:
// dy[c] (plus 0, as a zeroed dx accumulates it: -0 becomes +0) at the window's first maximum in
// row-major order, 0 at its other three taps. Written as float selects (the first tap equal to
// the maximum takes what is left of dy) so that GCC vectorizes it: random data mispredicts
// branches at every window. Returns how many taps are NaN; the caller then redoes the row by
// max_2x2_grad_row_nan.
OF_VECTOR_CLONES int max_2x2_grad_row(const float* __restrict r0, const float* __restrict r1, const float* __restrict dy,
                                      float* __restrict d0, float* __restrict d1, int64_t ow) {
  int nans = 0;
  for (int64_t c = 0; c < ow; ++c) {
    const float a = r0[2 * c], b = r0[2 * c + 1], e = r1[2 * c], f = r1[2 * c + 1], g = dy[c] + 0.0f;
    nans += (a != a) + (b != b) + (e != e) + (f != f);
    const float ab = b > a ? b : a, abe = e > ab ? e : ab, m = f > abe ? f : abe;
    float left = g;
    const float ga = a == m ? left : 0.0f;
    left = a == m ? 0.0f : left;
    const float gb = b == m ? left : 0.0f;
    left = b == m ? 0.0f : left;
    const float ge = e == m ? left : 0.0f;
    left = e == m ? 0.0f : left;
    d0[2 * c] = ga;
    d0[2 * c + 1] = gb;
    d1[2 * c] = ge;
    d1[2 * c + 1] = left;
  }
  return nans;
}

// The same row tap by tap, as PyTorch scans a window: a tap wins when `x > max || isnan(x)`, so
// the last NaN takes dy.
void max_2x2_grad_row_nan(const float* r0, const float* r1, const float* dy, float* d0, float* d1, int64_t ow) {
  for (int64_t c = 0; c < ow; ++c) {
    const float taps[4] = {r0[2 * c], r0[2 * c + 1], r1[2 * c], r1[2 * c + 1]};
    float* at[4] = {d0 + 2 * c, d0 + 2 * c + 1, d1 + 2 * c, d1 + 2 * c + 1};
    int best = 0;
    for (int t = 1; t < 4; ++t)
      if (taps[t] > taps[best] || std::isnan(taps[t])) best = t;
    for (int t = 0; t < 4; ++t) *at[t] = t == best ? dy[c] + 0.0f : 0.0f;
  }
}

class MaxPoolGrad final : public PoolGrad {
 public:
  MaxPoolGrad(const KernelConfig& cfg) : PoolGrad(cfg, "max_pool_grad", 2, true) {
    // One band per kernel thread the act may run on (set_kernel_threads comes before the kernel).
    teams_ = std::max(1, omp_get_max_threads());
    // Each kernel thread's scratch whole cache lines (16 floats or int32s) from the others' and
    // from the heap's neighbours (one row of padding before the first thread's and after the
    // last one's), so that no two threads write one line. (On this 2-core machine the act takes
    // about as long on two kernel threads as on one, padded or not: 9-10 ms for resnet18's.)
    band_stride_ = (cols_.in + 15) / 16 * 16;
    band_max_.resize(size_t(band_stride_ * (teams_ + 2)));
    band_row_.resize(size_t(band_stride_ * (teams_ + 2)));
    // The output columns whose windows have every tap inside: one run, between the edges.
    for (size_t o = 0; o < col_windows_.size(); ++o)
      if (col_windows_[o].lo == 0 && col_windows_[o].hi == cols_.kernel) {
        if (full_hi_ == 0) full_lo_ = int64_t(o);
        full_hi_ = int64_t(o) + 1;
      }
    best_stride_ = std::max<int64_t>(16, (full_hi_ - full_lo_ + 15) / 16 * 16);
    best_max_.resize(size_t(best_stride_ * (teams_ + 2)));
    best_row_.resize(size_t(best_stride_ * (teams_ + 2)));
    best_col_.resize(size_t(best_stride_ * (teams_ + 2)));
    auto plain = [](const Axis& a) { return a.kernel == 2 && a.stride == 2 && a.pad_begin == 0 && a.pad_end == 0 && a.dilation == 1 && a.out == a.in / 2; };
    two_by_two_ = plain(rows_) && plain(cols_);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    const float* x = static_cast<const float*>(in[1]);
    float* dx = static_cast<float*>(out[0]);
    const int64_t plane = rows_.in * cols_.in, out_plane = rows_.out * cols_.out;
    // Planes are independent: split between the kernel threads, each plane as on one thread.
    const int threads = std::min(teams_, omp_get_max_threads());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && planes_ > 1 && planes_ * plane >= kParallelElements)
    for (int64_t p = 0; p < planes_; ++p) {
      const int t = omp_get_thread_num();
      if (two_by_two_)
        plane_2x2(dy + p * out_plane, x + p * plane, dx + p * plane);
      else
        plane_general(dy + p * out_plane, x + p * plane, dx + p * plane, t);
    }
  }

 private:
  // One plane: per output row, each input column's maximum over the window's rows (and the
  // first row holding it), then per window the best of its columns.
  void plane_general(const float* dy, const float* x, float* dx, int team) {
    const int64_t w = cols_.in, dh = rows_.dilation, dw = cols_.dilation, full = full_hi_ - full_lo_;
    float* vmax = band_max_.data() + (team + 1) * band_stride_;
    int32_t* vrow = band_row_.data() + (team + 1) * band_stride_;
    float* best_max = best_max_.data() + (team + 1) * best_stride_;
    int32_t* best_row = best_row_.data() + (team + 1) * best_stride_;
    int32_t* best_col = best_col_.data() + (team + 1) * best_stride_;
    std::fill(dx, dx + rows_.in * w, 0.0f);
    for (const Window& rw : row_windows_) {
      if (rw.lo == rw.hi) {  // windows entirely in the padding
        dy += col_windows_.size();
        continue;
      }
      const float* first = x + (rw.start + rw.lo * dh) * w;
      std::copy(first, first + w, vmax);
      std::fill(vrow, vrow + w, int32_t(rw.lo));
      int nans = 0;  // an int, not a bool: GCC vectorizes the sum, not a bool's or
      for (int64_t j = 0; j < w; ++j) nans += first[j] != first[j];
      for (int64_t i = rw.lo + 1; i < rw.hi; ++i)
        nans += column_max(x + (rw.start + i * dh) * w, int32_t(i), vmax, vrow, w);
      if (nans > 0) {
        scan_row(rw, x, dx, dy);
        dy += col_windows_.size();
        continue;
      }
      if (full > 0)
        best_columns(vmax, vrow, col_windows_[size_t(full_lo_)].start, cols_.stride, dw, cols_.kernel, full, best_max, best_row, best_col);
      // In output column order, as before: a dx element that several windows route to sums
      // their gradients in the same order.
      for (int64_t o = 0; o < int64_t(col_windows_.size()); ++o) {
        const Window& cw = col_windows_[size_t(o)];
        const float g = *dy++;
        if (o >= full_lo_ && o < full_hi_) {
          dx[(rw.start + best_row[o - full_lo_] * dh) * w + best_col[o - full_lo_]] += g;
          continue;
        }
        if (cw.lo == cw.hi) continue;
        int64_t col = cw.start + cw.lo * dw;
        float m = vmax[col];
        int32_t row = vrow[col];
        for (int64_t j = cw.lo + 1; j < cw.hi; ++j) {
          // `|` and `&`, not `||` and `&&`: selects, not branches that random data mispredicts.
          const int64_t c = cw.start + j * dw;
          const float v = vmax[c];
          const int32_t vr = vrow[c];
          const bool take = (v > m) | ((v == m) & (vr < row));
          m = take ? v : m;
          row = take ? vr : row;
          col = take ? c : col;
        }
        dx[(rw.start + row * dh) * w + col] += g;
      }
    }
  }

  // One output row's windows tap by tap. Strict '>' keeps the first maximum, so ties go where
  // PyTorch sends them; a NaN takes the place (the last NaN of the window), as PyTorch's
  // `val > max || isnan(val)`.
  void scan_row(const Window& rw, const float* x, float* dx, const float* dy) const {
    const int64_t w = cols_.in, dh = rows_.dilation, dw = cols_.dilation;
    for (const Window& cw : col_windows_) {
      const float g = *dy++;
      if (cw.lo == cw.hi) continue;
      int64_t best = (rw.start + rw.lo * dh) * w + cw.start + cw.lo * dw;
      float m = x[best];
      for (int64_t i = rw.lo; i < rw.hi; ++i) {
        const int64_t row = (rw.start + i * dh) * w + cw.start;
        for (int64_t j = cw.lo; j < cw.hi; ++j)
          if (x[row + j * dw] > m || std::isnan(x[row + j * dw])) {
            m = x[row + j * dw];
            best = row + j * dw;
          }
      }
      dx[best] += g;
    }
  }

  void plane_2x2(const float* dy, const float* x, float* dx) const {
    const int64_t w = cols_.in, ow = cols_.out, plane = rows_.in * w;
    for (int64_t r = 0; r < rows_.out; ++r, dy += ow) {
      float* d0 = dx + 2 * r * w;
      if (max_2x2_grad_row(x + 2 * r * w, x + (2 * r + 1) * w, dy, d0, d0 + w, ow) > 0)
        max_2x2_grad_row_nan(x + 2 * r * w, x + (2 * r + 1) * w, dy, d0, d0 + w, ow);
      if (w % 2 != 0) d0[w - 1] = d0[2 * w - 1] = 0.0f;  // the column no window reads
    }
    if (rows_.in % 2 != 0) std::fill(dx + (rows_.in - 1) * w, dx + plane, 0.0f);  // likewise the last row
  }

  int teams_ = 1;
  bool two_by_two_ = false;
  // Per kernel thread, per input column: the max over the window's rows and the first kernel
  // row (tap index) holding it.
  std::vector<float> band_max_;
  std::vector<int32_t> band_row_;
  // Output columns [full_lo_, full_hi_) have windows with every tap inside; per kernel thread,
  // each one's maximum and the row and column of its first tap holding it.
  int64_t full_lo_ = 0, full_hi_ = 0, band_stride_ = 0, best_stride_ = 0;
  std::vector<float> best_max_;
  std::vector<int32_t> best_row_, best_col_;
};

// (dy) -> dx; dx's shape (the forward input's) comes from the compiler.
class AveragePoolGrad final : public PoolGrad {
 public:
  AveragePoolGrad(const KernelConfig& cfg)
      : PoolGrad(cfg, "average_pool_grad", 1, false) {
    include_pad_ = cfg.attrs.get_int("count_include_pad", 0) != 0;
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    float* dx = static_cast<float*>(out[0]);
    const int64_t w = cols_.in, plane = rows_.in * w;
    std::fill(dx, dx + planes_ * plane, 0.0f);
    for (int64_t p = 0; p < planes_; ++p, dx += plane) {
      for (const Window& rw : row_windows_) {
        for (const Window& cw : col_windows_) {
          const int64_t count =
              include_pad_ ? rw.padded * cw.padded : (rw.hi - rw.lo) * (cw.hi - cw.lo);
          const float g = *dy++;
          if (count <= 0) continue;  // the forward wrote 0 without reading anything
          const float share = g / static_cast<float>(count);
          for (int64_t i = rw.lo; i < rw.hi; ++i) {
            float* dst = dx + (rw.start + i) * w + cw.start;
            for (int64_t j = cw.lo; j < cw.hi; ++j) dst[j] += share;
          }
        }
      }
    }
  }

 private:
  bool include_pad_ = false;
};

// (dy [N,C,1,..]) -> dx [N,C,...]: every position of a plane gets dy / (its size).
class GlobalAveragePoolGrad final : public Kernel {
 public:
  GlobalAveragePoolGrad(const KernelConfig& cfg) { std::tie(planes_, spatial_) = global_average_pool_config(cfg, true); }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    float* dx = static_cast<float*>(out[0]);
    const float inv = spatial_ > 0 ? 1.0f / static_cast<float>(spatial_) : 0.0f;
    for (int64_t p = 0; p < planes_; ++p, dx += spatial_) std::fill(dx, dx + spatial_, dy[p] * inv);
  }

 private:
  int64_t planes_ = 0, spatial_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool_grad(const KernelConfig& cfg) {
  return std::make_unique<MaxPoolGrad>(cfg);
}
std::unique_ptr<Kernel> make_average_pool_grad(const KernelConfig& cfg) {
  return std::make_unique<AveragePoolGrad>(cfg);
}
std::unique_ptr<Kernel> make_global_average_pool_grad(const KernelConfig& cfg) {
  return std::make_unique<GlobalAveragePoolGrad>(cfg);
}

}  // namespace of::kernels::cpu
