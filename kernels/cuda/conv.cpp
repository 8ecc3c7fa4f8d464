// SPDX-License-Identifier: Apache-2.0
// conv, conv_grad_data and conv_grad_weight on the GPU, the CPU twins' algorithm and geometry
// (kernels/cpu/conv_geometry.h, 1-D to 3-D): per (batch element, group) block, im2col (conv.cu) into a column
// buffer the kernel allocates when prepared, then one cuBLAS sgemm (pedantic fp32):
//   conv:             Y_g [M/g, OH*OW]  = W_g [M/g, kdim] * col [kdim, OH*OW] (+ bias, ReLU)
//   conv_grad_data:   col = W_g^T * dY_g, then col2im into dX (a gather)
//   conv_grad_weight: dW_g += dY_g * col^T over the batch
// A 1x1, stride-1, unpadded conv reads its input block as the column matrix (no im2col).
// cuBLAS is column-major: a row-major C = A*B is computed as C^T = B^T * A^T.
#include "kernels/cpu/check.h"
#include "kernels/cpu/conv_geometry.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

ConvBlock block_of(const cpu::ConvGeometry& g) {
  ConvBlock b;
  b.channels = g.cg, b.d = g.d, b.h = g.h, b.w = g.w, b.kd = g.kd, b.kh = g.kh, b.kw = g.kw;
  b.od = g.od, b.oh = g.oh, b.ow = g.ow;
  b.stride_d = g.stride_d, b.stride_h = g.stride_h, b.stride_w = g.stride_w;
  b.pad_f = g.pad_f, b.pad_t = g.pad_t, b.pad_l = g.pad_l;
  b.dil_d = g.dil_d, b.dil_h = g.dil_h, b.dil_w = g.dil_w;
  return b;
}

// A conv kernel's shared state: the geometry, its block and the column buffer.
class ConvBase : public Kernel {
 protected:
  ConvBase(const KernelConfig& cfg, const char* name, const cpu::ConvGeometry& g) : g_(g), block_(block_of(g)) {
    if (g_.kdim() > INT32_MAX || g_.spatial() > INT32_MAX || g_.mg > INT32_MAX)
      fail(cpu::where_of(cfg), "{}: a block of [{}, {}] x [{}, {}] exceeds cuBLAS's 32-bit sizes", name, g_.mg,
           g_.kdim(), g_.kdim(), g_.spatial());
    if (!g_.direct) col_ = std::make_unique<DeviceBuffer>(size_t(g_.kdim() * g_.spatial()) * sizeof(float));
  }
  float* col() const { return col_ ? static_cast<float*>(col_->get()) : nullptr; }
  // The column matrix of block (b, grp) of x: the block itself when direct, else im2col of it.
  const float* columns(const float* x, int64_t b, int64_t grp, cudaStream_t stream) const {
    const float* xb = x + (b * g_.c + grp * g_.cg) * g_.volume();
    if (g_.direct) return xb;
    launch_im2col(block_, xb, col(), stream);
    return col();
  }

  cpu::ConvGeometry g_;
  ConvBlock block_;
  std::unique_ptr<DeviceBuffer> col_;
};

class Conv final : public ConvBase {
 public:
  Conv(const KernelConfig& cfg, const cpu::ConvForward& f) : ConvBase(cfg, "conv", f.g), bias_(f.bias), relu_(f.relu) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* x = static_cast<const float*>(in[0]);
    const auto* wt = static_cast<const float*>(in[1]);
    const auto* bias = bias_ ? static_cast<const float*>(in[2]) : nullptr;
    auto* y = static_cast<float*>(out[0]);
    const int64_t spatial = g_.spatial(), kdim = g_.kdim(), mg = g_.mg;
    const float one = 1.0f, beta = bias ? 1.0f : 0.0f;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    for (int64_t b = 0; b < g_.n && st == CUBLAS_STATUS_SUCCESS; ++b)
      for (int64_t grp = 0; grp < g_.group && st == CUBLAS_STATUS_SUCCESS; ++grp) {
        const float* col = columns(x, b, grp, s.stream);
        float* yg = y + (b * g_.m + grp * mg) * spatial;
        if (bias) launch_fill_rows(bias + grp * mg, yg, mg, spatial, s.stream);  // then the product adds to it
        if (mg > 0 && spatial > 0)
          st = cublas().sgemm(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, int(spatial), int(mg), int(kdim), &one, col, int(spatial),
                           wt + grp * mg * kdim, int(kdim), &beta, yg, int(spatial));
      }
    if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("conv: cublasSgemm", int(st));
    if (relu_) launch_unary(UnaryOp::relu, y, y, g_.n * g_.m * spatial, s.stream);
    s.check_launch("conv");
  }

 private:
  bool bias_, relu_;
};

class ConvGradData final : public ConvBase {
 public:
  explicit ConvGradData(const KernelConfig& cfg)
      : ConvBase(cfg, "conv_grad_data", cpu::conv_grad_geometry(cfg, "conv_grad_data", true)), bias_(cfg.inputs.size() == 3) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* wt = static_cast<const float*>(in[1]);
    auto* dx = static_cast<float*>(out[0]);
    const int64_t spatial = g_.spatial(), kdim = g_.kdim(), mg = g_.mg, plane = g_.volume();
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    for (int64_t b = 0; b < g_.n && st == CUBLAS_STATUS_SUCCESS; ++b)
      for (int64_t grp = 0; grp < g_.group && st == CUBLAS_STATUS_SUCCESS; ++grp) {
        const float* dyg = dy + (b * g_.m + grp * mg) * spatial;
        float* dxg = dx + (b * g_.c + grp * g_.cg) * plane;
        if (mg == 0) {  // no output channel reads this group: its gradient is zero
          launch_fill(dxg, 0.0f, g_.cg * plane, s.stream);
          continue;
        }
        // col [kdim, spatial] = W_g^T [kdim, mg] * dY_g [mg, spatial]; direct: dX_g is col itself.
        float* target = g_.direct ? dxg : col();
        st = cublas().sgemm(s.blas, CUBLAS_OP_N, CUBLAS_OP_T, int(spatial), int(kdim), int(mg), &one, dyg, int(spatial),
                         wt + grp * mg * kdim, int(kdim), &zero, target, int(spatial));
        if (!g_.direct) launch_col2im(block_, col(), dxg, s.stream);
      }
    if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("conv_grad_data: cublasSgemm", int(st));
    if (bias_) {  // ConvTranspose's bias: dX [N, C, plane] += bias[c], in place
      BroadcastSpace b;
      b.rank = 3;
      const int64_t dims[3] = {g_.n, g_.c, plane}, dense[3] = {g_.c * plane, plane, 1}, per_channel[3] = {0, 1, 0};
      for (int d = 0; d < 3; ++d) {
        b.dims[d] = dims[d];
        b.a_strides[d] = dense[d];
        b.b_strides[d] = per_channel[d];
      }
      b.total = g_.n * g_.c * plane;
      launch_binary(BinaryOp::add, b, dx, static_cast<const float*>(in[2]), dx, s.stream);
    }
    s.check_launch("conv_grad_data");
  }

 private:
  bool bias_;
};

class ConvGradWeight final : public ConvBase {
 public:
  explicit ConvGradWeight(const KernelConfig& cfg)
      : ConvBase(cfg, "conv_grad_weight", cpu::conv_grad_geometry(cfg, "conv_grad_weight", false)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    DeviceStream& s = *ctx.stream;
    const auto* dy = static_cast<const float*>(in[0]);
    const auto* x = static_cast<const float*>(in[1]);
    auto* dw = static_cast<float*>(out[0]);
    const int64_t spatial = g_.spatial(), kdim = g_.kdim(), mg = g_.mg;
    const float one = 1.0f, zero = 0.0f;
    launch_fill(dw, 0.0f, g_.m * kdim, s.stream);  // an empty batch or spatial size sums to zero
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    for (int64_t b = 0; b < g_.n && st == CUBLAS_STATUS_SUCCESS; ++b)
      for (int64_t grp = 0; grp < g_.group && st == CUBLAS_STATUS_SUCCESS; ++grp) {
        if (mg == 0 || spatial == 0) continue;
        const float* col = columns(x, b, grp, s.stream);
        // dW_g [mg, kdim] (+)= dY_g [mg, spatial] * col^T [spatial, kdim]
        st = cublas().sgemm(s.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(kdim), int(mg), int(spatial), &one, col, int(spatial),
                         dy + (b * g_.m + grp * mg) * spatial, int(spatial), b == 0 ? &zero : &one,
                         dw + grp * mg * kdim, int(kdim));
      }
    if (st != CUBLAS_STATUS_SUCCESS) s.note_failure("conv_grad_weight: cublasSgemm", int(st));
    s.check_launch("conv_grad_weight");
  }
};

}  // namespace

std::unique_ptr<Kernel> make_conv(const KernelConfig& cfg) { return std::make_unique<Conv>(cfg, cpu::conv_forward(cfg)); }
std::unique_ptr<Kernel> make_conv_grad_data(const KernelConfig& cfg) { return std::make_unique<ConvGradData>(cfg); }
std::unique_ptr<Kernel> make_conv_grad_weight(const KernelConfig& cfg) { return std::make_unique<ConvGradWeight>(cfg); }

}  // namespace of::kernels::cuda
