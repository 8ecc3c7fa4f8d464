// SPDX-License-Identifier: Apache-2.0
// conv (ONNX Conv, 1-D to 3-D, channels first): im2col (conv_geometry.h) into the act's
// workspace, then one dnnl_sgemm per (batch, group):
//   Y_g[M/g, OD*OH*OW] = W_g[M/g, C/g*kD*kH*kW] * col[.., OD*OH*OW].
// A 1x1, stride-1, unpadded conv skips im2col: the input block already is the column matrix.
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/check.h"
#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/thread_workspace.h"

namespace of::kernels::cpu {

namespace {

class Conv final : public Kernel {
 public:
  Conv(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;
  // The column matrix of one (batch, group).
  size_t workspace_bytes() const override { return g_.column_bytes(); }

 private:
  ConvGeometry g_;
  bool has_bias_ = false, relu_ = false;
};

Conv::Conv(const KernelConfig& cfg) {
  const ConvForward f = conv_forward(cfg);
  g_ = f.g;
  has_bias_ = f.bias;
  relu_ = f.relu;
}

void Conv::run(const RunCtx& ctx, const void* const* in, void* const* out) {
  const float* x = static_cast<const float*>(in[0]);
  const float* wt = static_cast<const float*>(in[1]);
  const float* bias = has_bias_ ? static_cast<const float*>(in[2]) : nullptr;
  float* y = static_cast<float*>(out[0]);
  const int64_t spatial = g_.spatial(), kdim = g_.kdim(), mg = g_.mg;
  const float beta = has_bias_ ? 1.0f : 0.0f;
  float* columns_at = g_.direct ? nullptr : static_cast<float*>(act_workspace(ctx, g_.column_bytes()));
  auto image = [&](int64_t b, float* cols) {
    for (int64_t g = 0; g < g_.group; ++g) {
      const float* col = columns(g_, x, b, g, cols);
      // Bias and ReLU touch one (batch, group) block while it is still in cache.
      float* yg = y + (b * g_.m + g * mg) * spatial;
      if (bias)  // pre-fill with the bias so that sgemm adds to it (beta = 1)
        for (int64_t i = 0; i < mg; ++i) std::fill(yg + i * spatial, yg + (i + 1) * spatial, bias[g * mg + i]);
      dnnl_sgemm('N', 'N', mg, spatial, kdim, 1.0f, wt + g * mg * kdim, kdim, col, spatial, beta, yg, spatial);
      if (relu_) relu_inplace(yg, mg * spatial);
    }
  };
  // With several kernel threads and a batch to share, each thread takes whole images (im2col,
  // one-threaded sgemm, bias, ReLU) into its own column matrix: the products of a conv this class
  // serves (few input channels) are too small for oneDNN to split well, and im2col is serial.
  // Each output element is one thread's product either way.
  const int threads = omp_get_max_threads();
  if (threads > 1 && g_.n >= 2 * threads && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < g_.n; ++b)
      image(b, g_.direct || omp_get_thread_num() == 0 ? columns_at : static_cast<float*>(thread_workspace(g_.column_bytes())));
    return;
  }
  for (int64_t b = 0; b < g_.n; ++b) image(b, columns_at);
}

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelConfig& cfg) {
  // The im2col kernel's constructor checks every shape and attribute; the oneDNN path is only
  // taken for a configuration that passed them.
  auto checked = std::make_unique<Conv>(cfg);
  if (auto dnnl = make_dnnl_conv(cfg)) return dnnl;
  return checked;
}

}  // namespace of::kernels::cpu
