// SPDX-License-Identifier: Apache-2.0
// max_pool, average_pool (2-D, NCHW) and global_average_pool. The compiler has resolved
// ceil_mode into the output shape; per output row and column the factory precomputes which kernel
// taps land inside the input, so run() has no bounds checks and padding never takes part.
#include <algorithm>
#include <limits>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

// For one output index: kernel taps [lo, hi) read inside the input; `start` is the first input
// index of the window (may be negative) and `padded` the window length clipped to the padded
// input's end (count_include_pad=1 divides by it).
struct Window {
  int64_t lo = 0, hi = 0, start = 0, padded = 0;
};

struct Axis {
  int64_t in = 0, out = 0, kernel = 1, stride = 1, pad_begin = 0, pad_end = 0, dilation = 1;
};

std::vector<Window> windows(const Axis& a) {
  std::vector<Window> ws(a.out);
  for (int64_t o = 0; o < a.out; ++o) {
    Window& w = ws[o];
    w.start = o * a.stride - a.pad_begin;
    w.lo = a.kernel;
    w.hi = 0;
    for (int64_t k = 0; k < a.kernel; ++k) {
      const int64_t i = w.start + k * a.dilation;
      if (i >= 0 && i < a.in) {
        w.lo = std::min(w.lo, k);
        w.hi = k + 1;
      }
    }
    if (w.hi == 0) w.lo = 0;
    w.padded = std::min(w.start + a.kernel, a.in + a.pad_end) - w.start;
  }
  return ws;
}

// Reads kernel_shape/strides/pads/dilations, checks that the output shape given by the compiler
// is the floor- or ceil-mode size, and returns the row and column axes.
std::pair<Axis, Axis> pool_axes(const KernelConfig& cfg, const char* name, bool dilations) {
  check_arity(cfg, name, 1, 1, 1);
  check_dtypes(cfg, name, DType::f32);
  const Shape& x = cfg.inputs[0].shape;
  const Shape& y = cfg.outputs[0].shape;
  if (x.size() != 4)
    fail(where_of(cfg), "{}: only 2-D pooling is supported: X {}", name, shape_str(x));
  const auto ks = get_ints_n(cfg, name, "kernel_shape", 2, {});
  const auto st = get_ints_n(cfg, name, "strides", 2, {1, 1});
  const auto pads = get_ints_n(cfg, name, "pads", 4, {0, 0, 0, 0});
  const auto dil = get_ints_n(cfg, name, "dilations", 2, {1, 1});
  if (!dilations && (dil[0] != 1 || dil[1] != 1))
    fail(where_of(cfg), "{}: dilations are not supported", name);
  Axis axes[2];
  int64_t floor_out[2], ceil_out[2];
  for (int i = 0; i < 2; ++i) {
    Axis& a = axes[i];
    a = {x[2 + i], y.size() == 4 ? y[2 + i] : 0, ks[i], st[i], pads[i], pads[i + 2], dil[i]};
    if (a.kernel < 1 || a.stride < 1 || a.dilation < 1 || a.pad_begin < 0 || a.pad_end < 0)
      fail(where_of(cfg), "{}: bad kernel_shape, strides, pads or dilations", name);
    const int64_t span = a.in + a.pad_begin + a.pad_end - a.dilation * (a.kernel - 1) - 1;
    if (span < 0) fail(where_of(cfg), "{}: window larger than padded input {}", name, shape_str(x));
    floor_out[i] = span / a.stride + 1;
    ceil_out[i] = (span + a.stride - 1) / a.stride + 1;
  }
  const bool ok = y.size() == 4 && y[0] == x[0] && y[1] == x[1] &&
                  (y[2] == floor_out[0] || y[2] == ceil_out[0]) &&
                  (y[3] == floor_out[1] || y[3] == ceil_out[1]);
  if (!ok)
    fail(where_of(cfg), "{}: output 0 has shape {}, expected {} (or {} with ceil_mode)", name,
         shape_str(y), shape_str({x[0], x[1], floor_out[0], floor_out[1]}),
         shape_str({x[0], x[1], ceil_out[0], ceil_out[1]}));
  return {axes[0], axes[1]};
}

class Pool : public Kernel {
 protected:
  Pool(const KernelConfig& cfg, const char* name, bool dilations) {
    const auto [r, c] = pool_axes(cfg, name, dilations);
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
  }
  void run(const void* const* in, void* const* out) override {
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    if (two_by_two_) {
      run_2x2(x, y);
      return;
    }
    const int64_t w = cols_.in, dh = rows_.dilation, dw = cols_.dilation;
    for (int64_t p = 0; p < planes_; ++p, x += rows_.in * w) {
      for (const Window& rw : row_windows_) {
        for (const Window& cw : col_windows_) {
          // A window entirely inside the padding (pads >= kernel) yields -inf.
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t i = rw.lo; i < rw.hi; ++i) {
            const float* src = x + (rw.start + i * dh) * w + cw.start;
            for (int64_t j = cw.lo; j < cw.hi; ++j) m = std::max(m, src[j * dw]);
          }
          *y++ = m;
        }
      }
    }
  }
 private:
  void run_2x2(const float* x, float* y) const {
    const int64_t w = cols_.in, ow = cols_.out;
    for (int64_t p = 0; p < planes_; ++p, x += rows_.in * w)
      for (int64_t r = 0; r < rows_.out; ++r, y += ow) {
        const float* r0 = x + 2 * r * w;
        const float* r1 = r0 + w;
        for (int64_t c = 0; c < ow; ++c) y[c] = std::max(std::max(r0[2 * c], r0[2 * c + 1]), std::max(r1[2 * c], r1[2 * c + 1]));
      }
  }
  bool two_by_two_ = false;
};

class AveragePool final : public Pool {
 public:
  AveragePool(const KernelConfig& cfg) : Pool(cfg, "average_pool", false) {
    include_pad_ = cfg.attrs.get_int("count_include_pad", 0) != 0;
  }
  void run(const void* const* in, void* const* out) override {
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
  GlobalAveragePool(const KernelConfig& cfg) {
    check_arity(cfg, "global_average_pool", 1, 1, 1);
    check_dtypes(cfg, "global_average_pool", DType::f32);
    const Shape& x = cfg.inputs[0].shape;
    if (x.size() < 3)
      fail(where_of(cfg), "global_average_pool: X {} needs rank >= 3", shape_str(x));
    Shape y(x.size(), 1);
    y[0] = x[0];
    y[1] = x[1];
    check_output_shape(cfg, "global_average_pool", 0, y);
    planes_ = x[0] * x[1];
    spatial_ = numel(x) / std::max<int64_t>(1, planes_);
  }
  void run(const void* const* in, void* const* out) override {
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
