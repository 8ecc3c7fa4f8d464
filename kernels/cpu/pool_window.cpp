// SPDX-License-Identifier: Apache-2.0
// 2-D pooling window geometry (see pool_window.h).
#include "kernels/cpu/pool_window.h"

#include <algorithm>

#include "kernels/cpu/check.h"

namespace of::kernels::cpu {

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

std::pair<Axis, Axis> pool_axes(const KernelConfig& cfg, const char* name, const Shape& x_given,
                                const Shape& y_given, const char* y_what, bool dilations) {
  if (x_given.size() != y_given.size())
    fail(where_of(cfg), "{}: X {} and {} {} differ in rank", name, shape_str(x_given), y_what, shape_str(y_given));
  const Shape x = as_2d_window(x_given), y = as_2d_window(y_given);  // 1-D pooling: height 1
  if (x.size() != 4)
    fail(where_of(cfg), "{}: only 1-D and 2-D pooling is supported: X {}", name, shape_str(x_given));
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
    // Bounded so that window arithmetic cannot overflow and setup cannot loop for ages.
    constexpr int64_t kMax = int64_t(1) << 24;
    if (a.kernel < 1 || a.stride < 1 || a.dilation < 1 || a.pad_begin < 0 || a.pad_end < 0 || a.kernel > kMax ||
        a.stride > kMax || a.dilation > kMax || a.pad_begin > kMax || a.pad_end > kMax)
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
    fail(where_of(cfg), "{}: {} has shape {}, expected {} (or {} with ceil_mode)", name, y_what,
         shape_str(y), shape_str({x[0], x[1], floor_out[0], floor_out[1]}),
         shape_str({x[0], x[1], ceil_out[0], ceil_out[1]}));
  return {axes[0], axes[1]};
}

}  // namespace of::kernels::cpu
