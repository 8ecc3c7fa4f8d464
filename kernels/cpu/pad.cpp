// SPDX-License-Identifier: Apache-2.0
// pad and pad_grad (kernels/pad_space.h: the index math the CUDA twins share). pad writes Y row
// by row along the last axis: a row whose outer position is a constant pad is all `value`, any
// other copies its input row and pads its two ends. pad_grad in constant mode is a crop (a copy
// of each row's middle); reflect and edge sum, per element of dX, the positions that read it
// (pad_grad_at), the CUDA twin's order of additions.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// Steps the multi-index idx[0..rank) over dims, last axis fastest; false once it wraps.
bool next_index(int64_t* idx, const int64_t* dims, int rank) {
  for (int d = rank - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

class Pad final : public Kernel {
 public:
  explicit Pad(const KernelConfig& cfg) : s_(pad_space(cfg, false)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* x = static_cast<const float*>(in[0]);
    auto* y = static_cast<float*>(out[0]);
    if (s_.rank == 0) {
      y[0] = x[0];
      return;
    }
    const int last = s_.rank - 1;
    const int64_t n = s_.in_dims[last], width = s_.out_dims[last], b = s_.before[last];
    for (int d = 0; d <= last; ++d)
      if (s_.out_dims[d] == 0) return;
    int64_t idx[PadSpace::kMaxRank] = {};
    float* row = y;
    do {
      int64_t src = 0;
      bool fill = false;
      for (int d = 0; d < last; ++d) {
        const int64_t i = pad_source(s_, d, idx[d]);
        fill = fill || i < 0;
        src = src * s_.in_dims[d] + (i < 0 ? 0 : i);
      }
      if (fill) {
        std::fill(row, row + width, s_.value);
      } else {
        const float* x_row = x + src * n;
        for (int64_t j = 0; j < b; ++j) row[j] = s_.mode == PadMode::constant ? s_.value : x_row[pad_source(s_, last, j)];
        if (n > 0) std::memcpy(row + b, x_row, size_t(n) * sizeof(float));
        for (int64_t j = b + n; j < width; ++j) row[j] = s_.mode == PadMode::constant ? s_.value : x_row[pad_source(s_, last, j)];
      }
      row += width;
    } while (next_index(idx, s_.out_dims, last));
  }

 private:
  PadSpace s_;
};

class PadGrad final : public Kernel {
 public:
  explicit PadGrad(const KernelConfig& cfg) : s_(pad_space(cfg, true)) {}
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    auto* dx = static_cast<float*>(out[0]);
    for (int d = 0; d < s_.rank; ++d)
      if (s_.in_dims[d] == 0) return;
    int64_t idx[PadSpace::kMaxRank] = {};
    if (s_.mode != PadMode::constant) {
      do {
        *dx++ = pad_grad_at(s_, dy, idx);
      } while (next_index(idx, s_.in_dims, s_.rank));
      return;
    }
    if (s_.rank == 0) {
      dx[0] = dy[0];
      return;
    }
    const int last = s_.rank - 1;
    const int64_t n = s_.in_dims[last];
    do {  // each row of dX is the middle of its row of dY
      int64_t src = 0;
      for (int d = 0; d < last; ++d) src = src * s_.out_dims[d] + idx[d] + s_.before[d];
      std::memcpy(dx, dy + src * s_.out_dims[last] + s_.before[last], size_t(n) * sizeof(float));
      dx += n;
    } while (next_index(idx, s_.in_dims, last));
  }

 private:
  PadSpace s_;
};

}  // namespace

std::unique_ptr<Kernel> make_pad(const KernelConfig& cfg) { return std::make_unique<Pad>(cfg); }
std::unique_ptr<Kernel> make_pad_grad(const KernelConfig& cfg) { return std::make_unique<PadGrad>(cfg); }

}  // namespace of::kernels::cpu
