// SPDX-License-Identifier: Apache-2.0
// Gradients of conv (1-D to 3-D, channels first, same attributes): per (batch, group),
//   conv_grad_data:   col = W_g^T [kdim, M/g] * dY_g [M/g, OH*OW], then col2im adds col into dX;
//   conv_grad_weight: dW_g [M/g, kdim] += dY_g * im2col(X)^T, accumulated over the batch.
// The column matrix lies in the act's workspace; a 1x1, stride-1, unpadded conv skips
// im2col/col2im.
// Outputs must not alias inputs.
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/check.h"
#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/thread_workspace.h"

namespace of::kernels::cpu {

namespace {

class ConvGradData final : public Kernel {
 public:
  explicit ConvGradData(const KernelConfig& cfg)
      : g_(conv_grad_geometry(cfg, "conv_grad_data", true)), bias_(cfg.inputs.size() == 3) {}
  // The column matrix of one (batch, group).
  size_t workspace_bytes() const override { return g_.column_bytes(); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    const float* wt = static_cast<const float*>(in[1]);
    float* dx = static_cast<float*>(out[0]);
    const int64_t spatial = g_.spatial(), kdim = g_.kdim(), mg = g_.mg, plane = g_.volume();
    float* col = g_.direct ? nullptr : static_cast<float*>(act_workspace(ctx, g_.column_bytes()));
    for (int64_t b = 0; b < g_.n; ++b) {
      for (int64_t g = 0; g < g_.group; ++g) {
        const float* dyg = dy + (b * g_.m + g * mg) * spatial;
        const float* wg = wt + g * mg * kdim;
        float* dxg = dx + (b * g_.c + g * g_.cg) * plane;
        if (mg == 0) {
          std::fill(dxg, dxg + g_.cg * plane, 0.0f);
        } else if (g_.direct) {  // dX_g is the column matrix itself
          dnnl_sgemm('T', 'N', kdim, spatial, mg, 1.0f, wg, kdim, dyg, spatial, 0.0f, dxg, spatial);
        } else {
          dnnl_sgemm('T', 'N', kdim, spatial, mg, 1.0f, wg, kdim, dyg, spatial, 0.0f, col, spatial);
          std::fill(dxg, dxg + g_.cg * plane, 0.0f);
          col2im_add(g_, col, dxg);
        }
      }
    }
    if (bias_) add_channel_bias(g_, static_cast<const float*>(in[2]), dx);
  }

 private:
  ConvGeometry g_;
  bool bias_;
};

class ConvGradWeight final : public Kernel {
 public:
  explicit ConvGradWeight(const KernelConfig& cfg) : g_(conv_grad_geometry(cfg, "conv_grad_weight", false)) {}
  // The column matrix of one (batch, group).
  size_t workspace_bytes() const override { return g_.column_bytes(); }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const float* dy = static_cast<const float*>(in[0]);
    const float* x = static_cast<const float*>(in[1]);
    float* dw = static_cast<float*>(out[0]);
    const int64_t spatial = g_.spatial(), kdim = g_.kdim(), mg = g_.mg;
    if (g_.n == 0 || mg == 0) {
      std::fill(dw, dw + g_.m * kdim, 0.0f);
      return;
    }
    float* columns_at = g_.direct ? nullptr : static_cast<float*>(act_workspace(ctx, g_.column_bytes()));
    // Images [from, to) summed into `sum` (the first overwrites, the rest add).
    auto images = [&](int64_t from, int64_t to, float* cols, float* sum) {
      for (int64_t b = from; b < to; ++b)
        for (int64_t g = 0; g < g_.group; ++g) {
          const float* col = columns(g_, x, b, g, cols);
          dnnl_sgemm('N', 'T', mg, kdim, spatial, 1.0f, dy + (b * g_.m + g * mg) * spatial, spatial,
                     col, spatial, b == from ? 0.0f : 1.0f, sum + g * mg * kdim, kdim);
        }
    };
    // With several kernel threads and a batch to share: each thread sums a run of images into its
    // own dW (thread 0 into dw, the others into their workspace, after their column matrix),
    // then dw adds the others' in thread order. A fixed order for a given thread count, so runs
    // repeat bit for bit; another thread count sums in another order (as oneDNN's products do).
    const int threads = omp_get_max_threads();
    if (threads > 1 && g_.n >= 2 * threads && !omp_in_parallel()) {
      const size_t cols = g_.direct ? 0 : (g_.column_bytes() + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
      const int64_t dw_n = g_.m * kdim;
      if (partial_.size() < size_t(threads)) partial_.resize(size_t(threads));  // grows once, not per act
      std::vector<float*>& partial = partial_;
#pragma omp parallel num_threads(threads)
      {
        const int t = omp_get_thread_num(), team = omp_get_num_threads();
        const int64_t from = g_.n * t / team, to = g_.n * (t + 1) / team;
        float* mine = dw;
        float* my_cols = columns_at;
        if (t > 0) {
          auto* w = static_cast<uint8_t*>(thread_workspace(cols + size_t(dw_n) * sizeof(float)));
          my_cols = g_.direct ? nullptr : reinterpret_cast<float*>(w);
          mine = reinterpret_cast<float*>(w + cols);
        }
        // n >= 2 * threads >= 2 * team: every thread has images.
        partial[size_t(t)] = mine;
        images(from, to, my_cols, mine);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t i = 0; i < dw_n; ++i) {
          float s = dw[i];
          for (int u = 1; u < team; ++u) s += partial[size_t(u)][i];
          dw[i] = s;
        }
      }
      return;
    }
    images(0, g_.n, columns_at, dw);
  }

 private:
  ConvGeometry g_;
  std::vector<float*> partial_;  // per thread of a split act: its sum of images
};

}  // namespace

// As make_conv: the im2col kernels check every shape and attribute; oneDNN's primitives are
// only taken for a configuration that passed them.
std::unique_ptr<Kernel> make_conv_grad_data(const KernelConfig& cfg) {
  auto checked = std::make_unique<ConvGradData>(cfg);
  if (auto dnnl = make_dnnl_conv_grad_data(cfg)) return dnnl;
  return checked;
}
std::unique_ptr<Kernel> make_conv_grad_weight(const KernelConfig& cfg) {
  auto checked = std::make_unique<ConvGradWeight>(cfg);
  if (auto dnnl = make_dnnl_conv_grad_weight(cfg)) return dnnl;
  return checked;
}

}  // namespace of::kernels::cpu
