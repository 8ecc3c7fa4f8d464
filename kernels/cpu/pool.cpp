// SPDX-License-Identifier: Apache-2.0
// max_pool, average_pool (2-D, NCHW) and global_average_pool. The compiler has resolved
// ceil_mode into the output shape; per output row and column the factory precomputes which kernel
// taps land inside the input (pool_window.h), so run() has no bounds checks and padding never
// takes part.
#include <algorithm>
#include <tuple>
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"
#include "kernels/cpu/pool_window.h"
#include "kernels/cpu/vector_clones.h"

namespace of::kernels::cpu {

namespace {

// max that keeps a NaN from either side, so a window holding NaN pools to NaN (as torch's
// max_pool2d; std::max(m, NaN) would return m).
inline float nan_max(float a, float b) { return a < b || b != b ? b : a; }

// y[c] = the max of the 2x2 window at column 2c of rows r0 and r1.
OF_VECTOR_CLONES void max_2x2_row(const float* __restrict r0, const float* __restrict r1, float* __restrict y, int64_t ow) {
  for (int64_t c = 0; c < ow; ++c) y[c] = nan_max(nan_max(r0[2 * c], r0[2 * c + 1]), nan_max(r1[2 * c], r1[2 * c + 1]));
}

// y[c] = the max over taps j < k of band[c * s + j * d], for n windows that lie inside the row:
// tap by tap across all windows, so each pass is one strided, vectorizable loop.
OF_VECTOR_CLONES void windows_max(const float* __restrict band, float* __restrict y, int64_t n, int64_t s, int64_t k,
                                  int64_t d) {
  for (int64_t c = 0; c < n; ++c) y[c] = band[c * s];
  for (int64_t j = 1; j < k; ++j)
    for (int64_t c = 0; c < n; ++c) y[c] = nan_max(y[c], band[c * s + j * d]);
}

// band[j] = nan_max(band[j], src[j]) over one input row.
OF_VECTOR_CLONES void band_max(const float* __restrict src, float* __restrict band, int64_t w) {
  for (int64_t j = 0; j < w; ++j) band[j] = nan_max(band[j], src[j]);
}

class Pool : public Kernel {
 protected:
  Pool(const KernelConfig& cfg, const char* name, bool dilations) {
    check_arity(cfg, name, 1, 1, 1);
    check_dtypes(cfg, name, DType::f32);
    const auto [r, c] =
        pool_axes(cfg, name, cfg.inputs[0].shape, cfg.outputs[0].shape, "output 0", dilations);
    rows_ = r;
    cols_ = c;
    planes_ = cfg.inputs[0].shape[0] * cfg.inputs[0].shape[1];
    row_windows_ = windows(rows_);
    col_windows_ = windows(cols_);
  }
  Axis rows_, cols_;
  int64_t planes_ = 0;
  std::vector<Window> row_windows_, col_windows_;
};

class MaxPool final : public Pool {
 public:
  MaxPool(const KernelConfig& cfg) : Pool(cfg, "max_pool", true) {
    // The common CNN case (2x2, stride 2, no padding or dilation, floor mode) has a loop of its own.
    auto plain = [](const Axis& a) { return a.kernel == 2 && a.stride == 2 && a.pad_begin == 0 && a.pad_end == 0 && a.dilation == 1 && a.out == a.in / 2; };
    two_by_two_ = plain(rows_) && plain(cols_);
    band_.resize(size_t(cols_.in));
    // Windows with every tap inside the row form one run [inside_lo_, inside_hi_).
    inside_lo_ = inside_hi_ = 0;
    for (int64_t c = 0; c < cols_.out; ++c) {
      const Window& cw = col_windows_[size_t(c)];
      if (cw.lo != 0 || cw.hi != cols_.kernel) continue;
      if (inside_hi_ == inside_lo_) inside_lo_ = c;
      inside_hi_ = c + 1;
    }
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    if (two_by_two_) {
      run_2x2(x, y);
      return;
    }
    // Separably: per output row, the max over its window's input rows for every input column
    // (contiguous, vectorizable), then per output column the max over its taps of that row.
    // Both maxima keep NaN, so the result equals the window's max taken tap by tap.
    const int64_t w = cols_.in, dh = rows_.dilation, dw = cols_.dilation;
    float* band = band_.data();
    for (int64_t p = 0; p < planes_; ++p, x += rows_.in * w) {
      for (const Window& rw : row_windows_) {
        // A window entirely inside the padding (pads >= kernel) yields -inf.
        std::fill(band, band + w, -std::numeric_limits<float>::infinity());
        for (int64_t i = rw.lo; i < rw.hi; ++i) band_max(x + (rw.start + i * dh) * w, band, w);
        for (int64_t c = 0; c < cols_.out; ++c) {
          if (c == inside_lo_ && inside_hi_ > inside_lo_) {  // the windows wholly inside the row
            windows_max(band + col_windows_[size_t(c)].start, y + c, inside_hi_ - inside_lo_, cols_.stride, cols_.kernel, dw);
            c = inside_hi_ - 1;
            continue;
          }
          const Window& cw = col_windows_[size_t(c)];
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t j = cw.lo; j < cw.hi; ++j) m = nan_max(m, band[cw.start + j * dw]);
          y[c] = m;
        }
        y += cols_.out;
      }
    }
  }
 private:
  void run_2x2(const float* x, float* y) const {
    const int64_t w = cols_.in, ow = cols_.out;
    for (int64_t p = 0; p < planes_; ++p, x += rows_.in * w)
      for (int64_t r = 0; r < rows_.out; ++r, y += ow) max_2x2_row(x + 2 * r * w, x + (2 * r + 1) * w, y, ow);
  }
  bool two_by_two_ = false;
  std::vector<float> band_;  // one output row's max over its window rows, per input column
  int64_t inside_lo_ = 0, inside_hi_ = 0;
};

class AveragePool final : public Pool {
 public:
  AveragePool(const KernelConfig& cfg) : Pool(cfg, "average_pool", false) {
    include_pad_ = cfg.attrs.get_int("count_include_pad", 0) != 0;
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const int64_t w = cols_.in;
    for (int64_t p = 0; p < planes_; ++p, x += rows_.in * w) {
      for (const Window& rw : row_windows_) {
        for (const Window& cw : col_windows_) {
          float sum = 0.0f;
          for (int64_t i = rw.lo; i < rw.hi; ++i) {
            const float* src = x + (rw.start + i) * w + cw.start;
            for (int64_t j = cw.lo; j < cw.hi; ++j) sum += src[j];
          }
          const int64_t count =
              include_pad_ ? rw.padded * cw.padded : (rw.hi - rw.lo) * (cw.hi - cw.lo);
          *y++ = count > 0 ? sum / static_cast<float>(count) : 0.0f;
        }
      }
    }
  }

 private:
  bool include_pad_ = false;
};

class GlobalAveragePool final : public Kernel {
 public:
  GlobalAveragePool(const KernelConfig& cfg) { std::tie(planes_, spatial_) = global_average_pool_config(cfg, false); }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const float inv = spatial_ > 0 ? 1.0f / static_cast<float>(spatial_) : 0.0f;
    for (int64_t p = 0; p < planes_; ++p, x += spatial_) {
      float sum = 0.0f;
      for (int64_t i = 0; i < spatial_; ++i) sum += x[i];
      y[p] = sum * inv;
    }
  }

 private:
  int64_t planes_ = 0, spatial_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool(const KernelConfig& cfg) {
  return std::make_unique<MaxPool>(cfg);
}
std::unique_ptr<Kernel> make_average_pool(const KernelConfig& cfg) {
  return std::make_unique<AveragePool>(cfg);
}
std::unique_ptr<Kernel> make_global_average_pool(const KernelConfig& cfg) {
  return std::make_unique<GlobalAveragePool>(cfg);
}

}  // namespace of::kernels::cpu
